//go:build release

// Package release tests make release: that two runs from one commit write
// the same bytes, and that the files hold what the repository's manifests
// and chart render, the image pinned by the digest of the image they carry.
// It runs helm and kubectl (for kustomize) from the paths in $HELM and
// $KUBECTL: run it with `make release-test`.
package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/robot-operator/robot-operator/test/internal/manifests"
)

const (
	root      = "../.."
	version   = "v0.2.0"
	repo      = "ghcr.io/robot-operator/robot-operator"
	namespace = "robot-operator"
)

// TestRelease builds the release twice and checks the two, then what the
// first holds.
func TestRelease(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, dir := range dirs {
		manifests.Run(t, "make", "-C", root, "--no-print-directory", "release", "VERSION="+version, "RELEASE_DIR="+dir)
	}
	sums := [2][]byte{}
	for i, dir := range dirs {
		sums[i] = read(t, filepath.Join(dir, "SHA256SUMS"))
		checkSums(t, dir, sums[i])
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Fatalf("two releases of one commit differ:\n%s\n%s", sums[0], sums[1])
	}
	t.Logf("SHA256SUMS, the same twice:\n%s", sums[0])
	dir := dirs[0]

	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		checkPlugin(t, filepath.Join(dir, "kubectl-robot-"+version+"-linux-"+arch+".tar.gz"), machine)
	}

	digest := imageDigest(t, filepath.Join(dir, "robot-operator-"+version+"-image.oci.tar"))
	image := repo + ":" + version + "@" + digest
	for _, tc := range []struct{ file, base string }{
		{"install.yaml", "artifacts/deploy"},
		{"install-namespaced.yaml", "artifacts/deploy-namespaced"},
	} {
		want := manifests.Objects(t, manifests.Run(t, manifests.Tool(t, "KUBECTL", "release-test"), "kustomize", filepath.Join(root, tc.base)))
		deployment := want["Deployment "+namespace+"/robot-operator"]
		if deployment == nil {
			t.Fatalf("%s renders no Deployment %s/robot-operator", tc.base, namespace)
		}
		setImage(t, deployment, image)
		compare(t, tc.file, tc.base+" with the image "+image, manifests.Objects(t, read(t, filepath.Join(dir, tc.file))), want)
	}

	// kubectl apply -f keeps a copy of each object in an annotation, and
	// the API server refuses annotations of over 256 KiB in all.
	for key, object := range manifests.Objects(t, read(t, filepath.Join(dir, "install.yaml"))) {
		data, err := json.Marshal(object.Object)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 262_144-1024 { // a kilobyte for the object's other annotations
			t.Errorf("%s is %d bytes of JSON: kubectl apply -f install.yaml could not keep its copy within the 262,144 bytes of annotations allowed", key, len(data))
		}
	}

	pushed(t, dir, digest)

	// The packaged chart renders install.yaml, the Namespace apart (helm
	// install --create-namespace makes it).
	chart := filepath.Join(dir, "robot-operator-"+strings.TrimPrefix(version, "v")+".tgz")
	metadata := string(manifests.Run(t, manifests.Tool(t, "HELM", "release-test"), "show", "chart", chart))
	for _, want := range []string{"\nversion: " + strings.TrimPrefix(version, "v") + "\n", "\nappVersion: " + version + "\n"} {
		if !strings.Contains("\n"+metadata, want) {
			t.Errorf("the packaged chart's Chart.yaml has no %q:\n%s", strings.TrimSpace(want), metadata)
		}
	}
	rendered := manifests.Objects(t, manifests.Run(t, manifests.Tool(t, "HELM", "release-test"), "template", "robot-operator", chart, "--namespace", namespace, "--include-crds"))
	install := manifests.Objects(t, read(t, filepath.Join(dir, "install.yaml")))
	delete(install, "Namespace /"+namespace)
	compare(t, "the packaged chart", "install.yaml", rendered, install)
}

// pushed runs make release-push to a registry of its own, and checks that
// the registry then serves the image index by the digest install.yaml
// names, and the chart byte for byte.
func pushed(t *testing.T, dir, digest string) {
	t.Helper()
	registry := exec.Command("go", "run", "./registry")
	registry.Dir = filepath.Join(root, "hack", "imagebuild")
	registry.Stderr = os.Stderr
	// go run's child would outlive a kill of go run: its own process group
	// goes whole.
	registry.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := registry.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-registry.Process.Pid, syscall.SIGKILL)
		_ = registry.Wait()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the test registry said no address: %v", err)
	}
	addr = strings.TrimSpace(addr)

	manifests.Run(t, "make", "-C", root, "--no-print-directory", "release-push", "VERSION="+version, "RELEASE_DIR="+dir,
		"IMAGE_REPO="+addr+"/robot-operator", "CHART_REGISTRY=oci://"+addr+"/charts", "HELM_PUSH_FLAGS=--plain-http")

	request, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v2/robot-operator/manifests/"+version, nil)
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Accept", "application/vnd.oci.image.index.v1+json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	index, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(index); response.StatusCode != http.StatusOK || "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Errorf("the registry serves %s:%s as %s (HTTP %d), want the index install.yaml pins, %s", addr+"/robot-operator", version, hex.EncodeToString(sum[:]), response.StatusCode, digest)
	}

	pulled := t.TempDir()
	chartVersion := strings.TrimPrefix(version, "v")
	manifests.Run(t, manifests.Tool(t, "HELM", "release-test"), "pull", "oci://"+addr+"/charts/robot-operator", "--version", chartVersion, "--plain-http", "--destination", pulled)
	name := "robot-operator-" + chartVersion + ".tgz"
	if !bytes.Equal(read(t, filepath.Join(pulled, name)), read(t, filepath.Join(dir, name))) {
		t.Errorf("the chart pulled from the registry differs from the release's %s", name)
	}
	t.Logf("pushed to %s: the image index %s and the chart %s", addr, digest, chartVersion)
}

// checkSums checks that SHA256SUMS lists every other file of dir, with its
// sum.
func checkSums(t *testing.T, dir string, sums []byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: %q is not a sum and a name", line)
		}
		got := sha256.Sum256(read(t, filepath.Join(dir, name)))
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS gives %s for %s, which hashes to %x", sum, name, got)
		}
		listed = append(listed, name)
	}
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !slices.Contains(listed, e.Name()) {
			t.Errorf("SHA256SUMS does not list %s", e.Name())
		}
	}
	for _, want := range []string{"install.yaml", "install-namespaced.yaml", "robot-operator-" + strings.TrimPrefix(version, "v") + ".tgz",
		"robot-operator-" + version + "-image.oci.tar", "robot-operator-" + version + "-linux-amd64.spdx.json", "robot-operator-" + version + "-linux-arm64.spdx.json",
		"kubectl-robot-" + version + "-linux-amd64.tar.gz", "kubectl-robot-" + version + "-linux-arm64.tar.gz"} {
		if !slices.Contains(listed, want) {
			t.Errorf("the release has no %s (it has %v)", want, listed)
		}
	}
}

// checkPlugin checks that the tarball holds the kubectl robot plugin, an
// executable named kubectl-robot for machine (kubectl finds it by that
// name on the PATH), and the licence.
func checkPlugin(t *testing.T, tarball string, machine elf.Machine) {
	t.Helper()
	compressed, err := gzip.NewReader(bytes.NewReader(read(t, tarball)))
	if err != nil {
		t.Fatalf("%s: %v", tarball, err)
	}
	archive := tar.NewReader(compressed)
	var files []string
	for {
		header, err := archive.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", tarball, err)
		}
		if header.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(header.Name, "./")
		files = append(files, name)
		if name != "kubectl-robot" {
			continue
		}
		if header.Mode&0o111 != 0o111 {
			t.Errorf("%s: kubectl-robot has the mode %o, which not everyone may run", tarball, header.Mode)
		}
		binary, err := io.ReadAll(archive)
		if err != nil {
			t.Fatal(err)
		}
		executable, err := elf.NewFile(bytes.NewReader(binary))
		if err != nil {
			t.Fatalf("%s: kubectl-robot is no ELF executable: %v", tarball, err)
		}
		if executable.Machine != machine || executable.Type != elf.ET_EXEC {
			t.Errorf("%s: kubectl-robot is a %s %s, want an executable for %s", tarball, executable.Type, executable.Machine, machine)
		}
	}
	if fmt.Sprint(files) != "[LICENSE kubectl-robot]" {
		t.Errorf("%s holds %v, want LICENSE and kubectl-robot", tarball, files)
	}
}

// imageDigest returns the digest of the one image index that the OCI
// layout in the tarball names, after checking that the layout holds it.
func imageDigest(t *testing.T, tarball string) string {
	t.Helper()
	dir := t.TempDir()
	manifests.Run(t, "tar", "-xf", tarball, "-C", dir)
	var index struct {
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(dir, "index.json")), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(index.Manifests[0].Digest) {
		t.Fatalf("the layout's index.json names %+v, want one image index", index.Manifests)
	}
	digest := index.Manifests[0].Digest
	blob := read(t, filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
	if sum := sha256.Sum256(blob); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("the image index blob does not hash to %s", digest)
	}
	var platforms struct {
		Manifests []struct {
			Platform struct{ OS, Architecture string } `json:"platform"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(blob, &platforms); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range platforms.Manifests {
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the image index has the platforms %v, want linux/amd64 and linux/arm64", got)
	}
	return digest
}

// setImage sets the image of the operator's container.
func setImage(t *testing.T, deployment *unstructured.Unstructured, image string) {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		t.Fatalf("the Deployment has no containers (%v)", err)
	}
	containers[0].(map[string]any)["image"] = image
	if err := unstructured.SetNestedSlice(deployment.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// compare fails for each object that one side has and the other lacks or
// holds otherwise.
func compare(t *testing.T, gotName, wantName string, got, want map[string]*unstructured.Unstructured) {
	t.Helper()
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s lacks %s, which %s has", gotName, key, wantName)
			continue
		}
		if a, b := manifests.Indent(t, g.Object), manifests.Indent(t, w.Object); a != b {
			t.Errorf("%s: %s differs from %s:\n%s", key, gotName, wantName, manifests.FirstDifference(gotName, a, wantName, b))
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("%s has %s, which %s lacks", gotName, key, wantName)
		}
	}
	t.Logf("%s: %d objects, as %s", gotName, len(got), wantName)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
