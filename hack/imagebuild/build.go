package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The facts the Dockerfile's image has too: the same user, entry point and
// ports, and no shell.
const (
	binaryPath = "/robot-operator"
	sbomPath   = "/usr/share/sbom/robot-operator.spdx.json"
	user       = "65532:65532"
)

var exposedPorts = []string{"8080/tcp", "8081/tcp"}

type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

type config struct {
	source, out, version, revision string
	// sbomDir, when set, gets each platform's SBOM as a file too.
	sbomDir   string
	platforms []platform
	created   time.Time
}

// build writes the image layout and returns the index's digest.
func build(cfg config) (v1.Hash, error) {
	work, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(work)

	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	index = mutate.Annotations(index, annotations(cfg)).(v1.ImageIndex)
	for _, p := range cfg.platforms {
		binary := filepath.Join(work, "robot-operator-"+p.os+"-"+p.arch)
		if err := compile(cfg, p, binary); err != nil {
			return v1.Hash{}, err
		}
		if err := writeSBOM(cfg, p, binary); err != nil {
			return v1.Hash{}, err
		}
		img, err := platformImage(cfg, p, binary)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", p, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.os, Architecture: p.arch}},
		})
	}
	if err := os.RemoveAll(cfg.out); err != nil {
		return v1.Hash{}, err
	}
	// index.json names the one image index, as a registry's tag would.
	path, err := layout.Write(cfg.out, empty.Index)
	if err == nil {
		err = path.AppendIndex(index, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": cfg.version}))
	}
	if err != nil {
		return v1.Hash{}, fmt.Errorf("writing the image layout: %w", err)
	}
	return index.Digest()
}

// compile builds the operator as `make build` does, for p.
func compile(cfg config, p platform, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+cfg.version+" -X main.revision="+cfg.revision, "-o", out, ".")
	cmd.Dir = cfg.source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "imagebuild: compiling the operator for %s\n", p)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("compiling for %s: %w", p, err)
	}
	return nil
}

// writeSBOM writes p's SBOM, the one the image holds, to
// cfg.sbomDir/robot-operator-OS-ARCH.spdx.json, for a release to publish
// beside the image; nothing when cfg.sbomDir is empty.
func writeSBOM(cfg config, p platform, binary string) error {
	if cfg.sbomDir == "" {
		return nil
	}
	sbom, err := spdx(binary, cfg, p)
	if err != nil {
		return fmt.Errorf("the SBOM of %s: %w", p, err)
	}
	if err := os.MkdirAll(cfg.sbomDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.sbomDir, "robot-operator-"+p.os+"-"+p.arch+".spdx.json"), sbom, 0o644)
}

func annotations(cfg config) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":   "robot-operator",
		"org.opencontainers.image.version": cfg.version,
		"org.opencontainers.image.created": cfg.created.Format(time.RFC3339),
		"org.opencontainers.image.source":  "https://github.com/robot-operator/robot-operator",
	}
	if cfg.revision != "" {
		a["org.opencontainers.image.revision"] = cfg.revision
	}
	return a
}

// platformImage is the image for one platform: one layer on an empty base.
func platformImage(cfg config, p platform, binary string) (v1.Image, error) {
	exe, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	sbom, err := spdx(binary, cfg, p)
	if err != nil {
		return nil, fmt.Errorf("the SBOM: %w", err)
	}
	files, err := layerTar(cfg.created, exe, sbom)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	file, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	file = file.DeepCopy()
	file.OS, file.Architecture = p.os, p.arch
	file.Created = v1.Time{Time: cfg.created}
	file.Author = "robot-operator"
	file.History = []v1.History{{Created: v1.Time{Time: cfg.created}, CreatedBy: "imagebuild: " + binaryPath + ", /etc/passwd, /etc/group, " + sbomPath}}
	ports := map[string]struct{}{}
	for _, port := range exposedPorts {
		ports[port] = struct{}{}
	}
	file.Config = v1.Config{
		User:         user,
		Entrypoint:   []string{binaryPath},
		ExposedPorts: ports,
		Labels:       annotations(cfg),
	}
	if img, err = mutate.ConfigFile(img, file); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, annotations(cfg)).(v1.Image), nil
}

// layerTar is the layer's files, in a fixed order with fixed owners and
// times, so that its bytes depend on the binary and the SBOM alone.
func layerTar(created time.Time, exe, sbom []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, f := range []struct {
		name     string
		mode     int64
		uid      int
		dir      bool
		contents []byte
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, contents: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, contents: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "robot-operator", mode: 0o755, contents: exe},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/share/", mode: 0o755, dir: true},
		{name: "usr/share/sbom/", mode: 0o755, dir: true},
		{name: "usr/share/sbom/robot-operator.spdx.json", mode: 0o644, contents: sbom},
	} {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: created, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.contents))
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.contents); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
