package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const source = "../.."

// testConfig builds the commit checked out, as `make image` does.
func testConfig(t *testing.T, out string) config {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = source
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(b))
	}
	seconds, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return config{
		source:    source,
		out:       out,
		version:   git("describe", "--tags", "--always", "--dirty"),
		revision:  git("rev-parse", "HEAD"),
		platforms: []platform{{"linux", "amd64"}, {"linux", "arm64"}},
		created:   time.Unix(seconds, 0).UTC(),
	}
}

// TestImage builds the image twice and opens it: one digest for one commit,
// both platforms, the Dockerfile's user, entry point and ports, no shell, an
// SBOM, and a binary that reports the commit's version.
func TestImage(t *testing.T) {
	first, second := testConfig(t, filepath.Join(t.TempDir(), "a")), testConfig(t, filepath.Join(t.TempDir(), "b"))
	digest, err := build(first)
	if err != nil {
		t.Fatal(err)
	}
	again, err := build(second)
	if err != nil {
		t.Fatal(err)
	}
	if digest != again {
		t.Errorf("two builds of one commit gave two index digests: %s and %s", digest, again)
	}
	t.Logf("image index %s, version %s", digest, first.version)

	index := openIndex(t, first.out)
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.String())
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s, want %s", desc.Platform, desc.MediaType, types.OCIManifestSchema1)
		}
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, first, desc.Platform, img)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}

	// Pushed to a registry, the index keeps its digest.
	server := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer server.Close()
	ref := strings.TrimPrefix(server.URL, "http://") + "/robot-operator:test"
	pushed, err := pushLayout(first.out, ref)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	remoteIndex, err := remote.Index(tag)
	if err != nil {
		t.Fatalf("reading %s back: %v", ref, err)
	}
	if got, err := remoteIndex.Digest(); err != nil || got != digest || !strings.HasSuffix(pushed, "@"+digest.String()) {
		t.Errorf("pushed %s; the registry serves index %s (%v), want %s", pushed, got, err, digest)
	}
}

func openIndex(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json lists %d entries (%v), want one image index", len(m.Manifests), m.Manifests)
	}
	index, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return index
}

// dockerfileFacts are the user, entry point and ports that the Dockerfile
// gives its image.
func dockerfileFacts(t *testing.T) (user string, entrypoint []string, ports []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(source, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if m := regexp.MustCompile(`(?m)^USER (\S+)$`).FindStringSubmatch(text); m != nil {
		user = m[1]
	}
	if m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindStringSubmatch(text); m != nil {
		if err := json.Unmarshal([]byte(m[1]), &entrypoint); err != nil {
			t.Fatalf("Dockerfile ENTRYPOINT: %v", err)
		}
	}
	if m := regexp.MustCompile(`(?m)^EXPOSE (.+)$`).FindStringSubmatch(text); m != nil {
		for _, port := range strings.Fields(m[1]) {
			ports = append(ports, port+"/tcp")
		}
	}
	if user == "" || entrypoint == nil || ports == nil {
		t.Fatalf("the Dockerfile has no USER, ENTRYPOINT or EXPOSE line (user %q, entrypoint %v, ports %v)", user, entrypoint, ports)
	}
	return user, entrypoint, ports
}

func checkImage(t *testing.T, cfg config, p *v1.Platform, img v1.Image) {
	t.Helper()
	file, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if file.OS != p.OS || file.Architecture != p.Architecture {
		t.Errorf("%s: the config says %s/%s", p, file.OS, file.Architecture)
	}
	if !file.Created.Time.Equal(cfg.created) {
		t.Errorf("%s: created %s, want the commit's time %s", p, file.Created.Time, cfg.created)
	}
	user, entrypoint, ports := dockerfileFacts(t)
	if file.Config.User != user {
		t.Errorf("%s: user %q, the Dockerfile's is %q", p, file.Config.User, user)
	}
	if !slices.Equal(file.Config.Entrypoint, entrypoint) || len(file.Config.Cmd) != 0 {
		t.Errorf("%s: entrypoint %q and cmd %q, the Dockerfile's entrypoint is %q and no cmd", p, file.Config.Entrypoint, file.Config.Cmd, entrypoint)
	}
	var exposed []string
	for port := range file.Config.ExposedPorts {
		exposed = append(exposed, port)
	}
	slices.Sort(exposed)
	if !slices.Equal(exposed, ports) {
		t.Errorf("%s: exposed ports %v, the Dockerfile's are %v", p, exposed, ports)
	}

	files := layerFiles(t, img)
	var names []string
	for name := range files {
		names = append(names, name)
		if base := path.Base(name); slices.Contains([]string{"sh", "bash", "ash", "dash", "busybox"}, base) {
			t.Errorf("%s: the image has a shell, %s", p, name)
		}
	}
	slices.Sort(names)
	want := []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "robot-operator", "tmp/", "usr/", "usr/share/", "usr/share/sbom/", "usr/share/sbom/robot-operator.spdx.json"}
	if !slices.Equal(names, want) {
		t.Errorf("%s: files %v, want %v", p, names, want)
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd has no user 65532: %q", p, files["etc/passwd"])
	}

	var sbom spdxDocument
	if err := json.Unmarshal(files["usr/share/sbom/robot-operator.spdx.json"], &sbom); err != nil {
		t.Fatalf("%s: the SBOM: %v", p, err)
	}
	clientGo := requiredVersion(t, "k8s.io/client-go")
	found := slices.ContainsFunc(sbom.Packages, func(pkg spdxPackage) bool {
		return pkg.Name == "k8s.io/client-go" && pkg.VersionInfo == clientGo
	})
	if sbom.SPDXVersion != "SPDX-2.3" || !found || sbom.Packages[0].VersionInfo != cfg.version {
		t.Errorf("%s: the SBOM (%s, %d packages, main version %q) does not list k8s.io/client-go %s or the version %s",
			p, sbom.SPDXVersion, len(sbom.Packages), sbom.Packages[0].VersionInfo, clientGo, cfg.version)
	}

	if p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH {
		exe := filepath.Join(t.TempDir(), "robot-operator")
		if err := os.WriteFile(exe, files["robot-operator"], 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(exe, "-version").Output()
		want := "robot-operator " + cfg.version + " (revision " + cfg.revision + ", "
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s: the image's binary -version printed %q (%v), want it to start %q", p, out, err, want)
		}
	}
}

// layerFiles is every file and directory of the image's layers, with the
// contents of the files.
func layerFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		r := tar.NewReader(rc)
		for {
			h, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
		}
		rc.Close()
	}
	return files
}

// requiredVersion is the version of module that the operator's go.mod
// requires.
func requiredVersion(t *testing.T, module string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(source, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+(\S+)`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("go.mod does not require %s", module)
	}
	return m[1]
}
