package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The SBOM is an SPDX 2.3 document made from what the Go toolchain records
// in the binary: the main module, every module linked in with its version
// and checksum, the toolchain and the build settings. It is what scanners
// read from the binary themselves, in the form they read from an image.

type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string            `json:"SPDXID"`
	Name             string            `json:"name"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// spdx is the SBOM of the Go binary at path.
func spdx(path string, cfg config, p platform) ([]byte, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var settings []string
	for _, s := range info.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	main := spdxPackage{
		SPDXID:           "SPDXRef-Package-main",
		Name:             info.Main.Path,
		VersionInfo:      cfg.version,
		DownloadLocation: "https://" + info.Main.Path,
		ExternalRefs:     []spdxExternalRef{purl(info.Main.Path, cfg.version)},
		Comment:          "built with " + info.GoVersion + " for " + p.String() + ": " + strings.Join(settings, " "),
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              "robot-operator " + cfg.version + " " + p.String(),
		DocumentNamespace: fmt.Sprintf("https://github.com/robot-operator/robot-operator/spdx/%s/%s-%s", cfg.version, p.os, p.arch),
		CreationInfo:      spdxCreationInfo{Created: cfg.created.Format(time.RFC3339), Creators: []string{"Tool: robot-operator-imagebuild"}},
		Packages: []spdxPackage{main, {
			SPDXID:           "SPDXRef-Package-go",
			Name:             "go",
			VersionInfo:      strings.TrimPrefix(info.GoVersion, "go"),
			DownloadLocation: "https://go.dev/dl/",
			ExternalRefs:     []spdxExternalRef{purl("stdlib", info.GoVersion)},
		}},
		Relationships: []spdxRelationship{
			{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: main.SPDXID},
			{Element: main.SPDXID, Type: "DEPENDS_ON", Related: "SPDXRef-Package-go"},
		},
	}
	for i, dep := range info.Deps {
		module := dep
		if dep.Replace != nil {
			module = dep.Replace
		}
		pkg := spdxPackage{
			SPDXID:           fmt.Sprintf("SPDXRef-Package-%d", i),
			Name:             dep.Path,
			VersionInfo:      module.Version,
			DownloadLocation: "https://proxy.golang.org/" + module.Path + "/@v/" + module.Version + ".zip",
			ExternalRefs:     []spdxExternalRef{purl(module.Path, module.Version)},
		}
		if module.Sum != "" {
			// The module's go.sum hash (h1:, SHA-256 over its files), which
			// SPDX has no algorithm name for: kept as a comment.
			pkg.Comment = "go.sum: " + module.Sum
		}
		doc.Packages = append(doc.Packages, pkg)
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: main.SPDXID, Type: "DEPENDS_ON", Related: pkg.SPDXID})
	}
	return json.MarshalIndent(doc, "", "  ")
}

func purl(module, version string) spdxExternalRef {
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: "pkg:golang/" + module + "@" + version}
}
