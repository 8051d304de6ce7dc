package app

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuild(t *testing.T) {
	got := Build("v0.2.0", "0123abcd")
	if got.Version != "v0.2.0" || got.Revision != "0123abcd" || got.GoVersion != runtime.Version() {
		t.Errorf("Build(v0.2.0, 0123abcd) = %+v, want the stamped version and revision and Go %s", got, runtime.Version())
	}
	// go test records no commit: nothing stamped is "unknown", not empty,
	// so the gauge's labels are never blank.
	if got := Build("", ""); got.Version != "unknown" || got.Revision == "" {
		t.Errorf("Build of an unstamped binary = %+v, want version unknown and a revision", got)
	}
}

func TestVCSRevision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		ok       bool
		want     string
	}{
		{"clean tree", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}, true, "abc"},
		{"changed tree", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "abc"}}, true, "abc-dirty"},
		{"no commit recorded", []debug.BuildSetting{{Key: "GOOS", Value: "linux"}}, true, ""},
		{"no build information", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Settings: tc.settings}, tc.ok }
			if got := vcsRevision(read); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
