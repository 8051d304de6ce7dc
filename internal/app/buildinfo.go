package app

import (
	"cmp"
	"runtime"
	"runtime/debug"

	"github.com/robot-operator/robot-operator/internal/metrics"
)

// Build says which build this binary is: version and revision as the build
// stamped them, and the Go toolchain that compiled it. A build that stamped
// no revision (go build or go run by hand) reports the commit the Go
// toolchain recorded, if it recorded one, marked -dirty when the tree had
// changes; "unknown" otherwise.
func Build(version, revision string) metrics.BuildInfo {
	return metrics.BuildInfo{
		Version:   cmp.Or(version, "unknown"),
		Revision:  cmp.Or(revision, vcsRevision(debug.ReadBuildInfo), "unknown"),
		GoVersion: runtime.Version(),
	}
}

// vcsRevision is the commit that read says the Go toolchain recorded in
// the binary, empty when it recorded none.
func vcsRevision(read func() (*debug.BuildInfo, bool)) string {
	info, ok := read()
	if !ok {
		return ""
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision != "" && modified == "true" {
		revision += "-dirty"
	}
	return revision
}
