// Command imagebuild builds the operator's OCI image with no container
// engine: it cross-compiles the operator for each platform, puts the binary,
// a passwd entry for the non-root user and an SPDX SBOM into a single layer
// on an empty base, and writes a multi-platform image index as an OCI image
// layout, which it can push to a registry too.
//
// The build is reproducible: every time in it (file times, the image's
// creation time, the SBOM's) is the commit's time, so two builds of one
// commit with one Go toolchain give one digest.
//
//	go run ./hack/imagebuild -out _output/image -version $(git describe --tags --always --dirty)
//	go run ./hack/imagebuild -out _output/image -push ghcr.io/you/robot-operator:v0.1.0
//	go run ./hack/imagebuild -push-layout DIR -push ghcr.io/you/robot-operator:v0.1.0
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var cfg config
	var platforms, epoch string
	flag.StringVar(&cfg.source, "source", ".", "The operator's source tree (the repository root).")
	flag.StringVar(&cfg.out, "out", "_output/image", "Write the OCI image layout here (replaced if it exists).")
	flag.StringVar(&cfg.version, "version", "unknown", "The version stamped into the binary and the image's labels.")
	flag.StringVar(&cfg.revision, "revision", "", "The commit, stamped into the binary and the image's labels.")
	flag.StringVar(&cfg.sbomDir, "sbom-dir", "", "Also write each platform's SBOM here, as robot-operator-OS-ARCH.spdx.json.")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "Comma-separated os/arch pairs.")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Seconds since 1970 for every time in the image (default: 0).")
	push := flag.String("push", "", "Push the built index to this image reference (credentials from the Docker config).")
	pushLayoutDir := flag.String("push-layout", "", "Build nothing: push the image index of the OCI image layout in this directory (a release's) to -push.")
	flag.Parse()

	if *pushLayoutDir != "" {
		if *push == "" {
			fail(fmt.Errorf("-push-layout needs -push"))
		}
		pushed, err := pushLayout(*pushLayoutDir, *push)
		if err != nil {
			fail(err)
		}
		fmt.Printf("imagebuild: pushed %s\n", pushed)
		return
	}

	for _, p := range strings.Split(platforms, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os == "" || arch == "" {
			fail(fmt.Errorf("-platforms: %q is not os/arch", p))
		}
		cfg.platforms = append(cfg.platforms, platform{os: os, arch: arch})
	}
	if epoch != "" {
		seconds, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			fail(fmt.Errorf("-source-date-epoch: %w", err))
		}
		cfg.created = time.Unix(seconds, 0).UTC()
	} else {
		cfg.created = time.Unix(0, 0).UTC()
	}

	digest, err := build(cfg)
	if err != nil {
		fail(err)
	}
	fmt.Printf("imagebuild: wrote %s (index %s, %d platforms)\n", cfg.out, digest, len(cfg.platforms))
	if *push != "" {
		pushed, err := pushLayout(cfg.out, *push)
		if err != nil {
			fail(err)
		}
		fmt.Printf("imagebuild: pushed %s\n", pushed)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "imagebuild: %v\n", err)
	os.Exit(1)
}
