package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

// robotsPerNode keeps kwok's fake nodes under their 110-pod capacity.
const robotsPerNode = 100

// serviceCIDR is the clusters' Service IP range under -service: room for
// a million Services.
const serviceCIDR = "10.96.0.0/12"

// environment is what every N shares: the tools, the operator binary, and
// the versions to report.
type environment struct {
	*localcluster.Env
	cfg       config
	goVersion string
	memory    string
}

func newEnvironment(ctx context.Context, cfg config) (*environment, error) {
	shared, err := localcluster.NewEnv(ctx, cfg.root, filepath.Join(cfg.root, "_output", "bench"), logf)
	if err != nil {
		return nil, err
	}
	if cfg.service {
		// The API server's default range, a /24, holds 254 Services.
		shared.ServiceCIDR = serviceCIDR
	}
	return &environment{Env: shared, cfg: cfg, goVersion: runtime.Version(), memory: totalMemory()}, nil
}

// cluster is one fresh local cluster.
type cluster struct {
	*localcluster.Cluster
	env *environment
}

// servedVersions makes the CRD, once installed, serve v1beta1 alone unless
// -v1alpha1-served, and waits for it to be Established.
func (c *cluster) servedVersions(ctx context.Context) error {
	if c.env.cfg.v1beta1Only {
		// The test op fails the patch if the first version is not v1alpha1.
		patch := `[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"replace","path":"/spec/versions/0/served","value":false}]`
		if _, err := c.Kubectl(ctx, "patch", "crd", "robots.robot.dev", "--type=json", "-p", patch); err != nil {
			return err
		}
	}
	return c.WaitEstablished(ctx)
}

// newCluster replaces any earlier bench cluster by a fresh one with enough
// fake nodes for pods Robots, auditing the operator's requests.
func (e *environment) newCluster(ctx context.Context, pods int) (*cluster, error) {
	c, err := e.NewCluster(ctx, e.cfg.cluster, pods/robotsPerNode+1)
	if err != nil {
		return nil, err
	}
	return &cluster{Cluster: c, env: e}, nil
}

func totalMemory() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var kb uint64
		if _, err := fmt.Sscanf(s.Text(), "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}
