package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushLayout pushes the image index of the layout at dir to ref, and returns
// the reference by digest.
func pushLayout(dir, ref string) (string, error) {
	tag, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("-push: %w", err)
	}
	path, err := layout.FromPath(dir)
	if err != nil {
		return "", err
	}
	outer, err := path.ImageIndex()
	if err != nil {
		return "", err
	}
	// layout.Write stores the index as the one entry of index.json.
	manifest, err := outer.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(manifest.Manifests) != 1 {
		return "", fmt.Errorf("%s/index.json has %d entries, want the one image index", dir, len(manifest.Manifests))
	}
	index, err := outer.ImageIndex(manifest.Manifests[0].Digest)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(tag, index, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", tag, err)
	}
	digest, err := index.Digest()
	if err != nil {
		return "", err
	}
	return tag.Context().Digest(digest.String()).String(), nil
}
