# syntax=docker/dockerfile:1
#
# The robot-operator image: one static binary on distroless, run as a
# non-root user, with no shell and no package manager.
#
#   make image IMG=REGISTRY/robot-operator:TAG
# or
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t IMG .

# The builder runs on the build machine's platform and cross-compiles, so a
# multi-platform build (docker buildx build --platform linux/amd64,linux/arm64)
# needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY *.go ./
COPY pkg/ pkg/
COPY internal/ internal/

ARG VERSION=unknown
ARG REVISION=unknown
ARG TARGETOS
ARG TARGETARCH
# As `make build`: no cgo (a static binary), paths trimmed, version and commit stamped.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/robot-operator .

# distroless static: CA certificates, tzdata and /etc/passwd, nothing else.
# The :nonroot tag's default user is nonroot, uid and gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/robot-operator /robot-operator
# Numeric, so that runAsNonRoot can be checked without reading /etc/passwd.
USER 65532:65532
# The metrics and health probe ports (-metrics-bind-address,
# -health-probe-bind-address).
EXPOSE 8080 8081
ENTRYPOINT ["/robot-operator"]
