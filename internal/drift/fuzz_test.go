package drift

// Fuzz tests of the pure functions: the Deployment a Robot becomes, the drift
// check, and the status. The seeds below and the inputs kept in
// testdata/fuzz/<Name>/ run with every `go test`; `make fuzz` runs each
// target for a while to look for new ones.
//
// The Robots are decoded from the fuzz input and kept only when the CRD
// admits them (robotFromFuzz). The API server's side is simulated in test
// code: the JSON it decodes an apply from, the defaults it sets on an
// apps/v1 Deployment (apiServerDefaults), the part of its validation a
// Robot's fields can fail (deploymentRejected), and the JSON the informer
// decodes the stored object from.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// FuzzNoDriftAfterApply: the Deployment built from any Robot the CRD admits,
// once the API server has defaulted and stored it, and whatever other writers
// add next to the operator's fields, shows no drift: the next sync of the
// Robot writes nothing.
func FuzzNoDriftAfterApply(f *testing.F) {
	for _, seed := range robotSeeds() {
		for _, foreign := range []uint8{0, 0xff} {
			for _, workloadData := range [][]byte{nil, workloadSeeds()[0]} {
				f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
					seed.argBytes(), seed.env, seed.resourceBytes(), foreign, workloadData)
			}
		}
	}
	for _, workloadData := range workloadSeeds() {
		seed := robotSeeds()[0]
		for _, foreign := range []uint8{0, 0xff} {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), foreign, workloadData)
		}
	}
	f.Fuzz(func(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
		args, env, resources []byte, foreign uint8, workloadData []byte) {
		robot, skip := robotFromFuzz(t, name, deploymentName, image, replicas, hasReplicas, port, hasPort, args, env, resources)
		if skip != "" {
			t.Skip(skip)
		}
		// The pod template fields, through the API server as well.
		workloadFromFuzz(robot, workloadData)
		robot = robottest.DecodedAgain(t, robot)
		if reason := workloadRefused(robot); reason != "" {
			t.Skip("the CRD refuses the Robot: " + reason)
		}
		if refusedPastDeadline(t, robot) {
			t.Skip("minReadySeconds reaches the progress deadline: the operator refuses the spec")
		}
		desired, err := workload.NewDeployment(robot)
		if err != nil {
			t.Fatalf("newDeployment refuses a Robot the CRD admits: %v\nspec: %s", err, asJSON(t, robot.Spec))
		}

		// The next sync decodes the Robot afresh: it must ask for the
		// same Deployment, or the spec hash changes on every sync.
		again, err := workload.NewDeployment(robottest.DecodedAgain(t, robot))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := again.Annotations[workload.AnnotationSpecHash], desired.Annotations[workload.AnnotationSpecHash]; got != want {
			t.Fatalf("the same Robot decoded again hashes to %s, not %s", got, want)
		}

		stored, skip := storedAfterApply(t, robot, desired, foreign)
		if skip != "" {
			t.Skip(skip)
		}
		if drift := DeploymentDrift(desired, stored); drift != "" {
			t.Fatalf("drift right after the apply: %s\nspec: %s\nstored: %s", drift, asJSON(t, robot.Spec), asJSON(t, stored.Spec.Template.Spec))
		}
	})
}

// FuzzDriftDetectsOwnedChanges: a change someone makes to a field the Robot
// sets (replicas, the image, an env var, an arg, a port, a resource
// quantity, a pod template field, the strategy, minReadySeconds) is always
// drift, so the operator puts it back.
func FuzzDriftDetectsOwnedChanges(f *testing.F) {
	for i, seed := range robotSeeds() {
		for which := range uint8(ownedFields) {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), uint8(i%2*0xff), which, "changed", int32(i), []byte(nil))
		}
	}
	// Each pod template field changed, on a Robot that sets all of them
	// and one that sets each alone.
	for i, workloadData := range workloadSeeds() {
		seed := robotSeeds()[0]
		for number := range int32(workloadChanges * 2) {
			f.Add(seed.name, seed.deploymentName, seed.image, seed.replicas, seed.hasReplicas, seed.port, seed.hasPort,
				seed.argBytes(), seed.env, seed.resourceBytes(), uint8(i%2*0xff), uint8(ownedWorkload), "changed", number, workloadData)
		}
	}
	f.Fuzz(func(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
		args, env, resources []byte, foreign uint8, which uint8, value string, number int32, workloadData []byte) {
		robot, skip := robotFromFuzz(t, name, deploymentName, image, replicas, hasReplicas, port, hasPort, args, env, resources)
		if skip != "" {
			t.Skip(skip)
		}
		workloadFromFuzz(robot, workloadData)
		robot = robottest.DecodedAgain(t, robot)
		if reason := workloadRefused(robot); reason != "" {
			t.Skip("the CRD refuses the Robot: " + reason)
		}
		if refusedPastDeadline(t, robot) {
			t.Skip("minReadySeconds reaches the progress deadline: the operator refuses the spec")
		}
		desired, err := workload.NewDeployment(robot)
		if err != nil {
			t.Fatalf("newDeployment refuses a Robot the CRD admits: %v", err)
		}
		stored, skip := storedAfterApply(t, robot, desired, foreign)
		if skip != "" {
			t.Skip(skip)
		}
		if DeploymentDrift(desired, stored) != "" {
			t.Skip("drift before any change: FuzzNoDriftAfterApply's concern")
		}

		edited := stored.DeepCopy()
		change := changeOwnedField(robot, edited, which, strings.ToValidUTF8(value, "\uFFFD"), number)
		if change == "" {
			t.Skip("the Robot does not set the field chosen")
		}
		// The edit goes through the API server too.
		robottest.APIServerDefaults(edited)
		if reason := deploymentRejected(edited); reason != "" {
			t.Skip("the API server refuses the edit: " + reason)
		}
		edited = robottest.Decoded(t, edited)
		if apiequality.Semantic.DeepEqual(edited.Spec, stored.Spec) {
			t.Fatalf("the edit (%s) changed nothing: the test's mistake", change)
		}
		if drift := DeploymentDrift(desired, edited); drift == "" {
			t.Fatalf("no drift after %s\nspec: %s\nedited: %s", change, asJSON(t, robot.Spec), asJSON(t, edited.Spec.Template.Spec))
		}
	})
}

// robotSeed is a readable form of robotFromFuzz's input.
type robotSeed struct {
	name, deploymentName, image string
	replicas                    int32
	hasReplicas                 bool
	port                        int32
	hasPort                     bool
	args                        []string
	env                         []byte // see envFromFuzz
	resources                   string // "lc=500m,rm=64Mi": see resourceBytes
}

// argBytes are s.args as robotFromFuzz reads them.
func (s robotSeed) argBytes() []byte { return []byte(strings.Join(s.args, "\x00")) }

// resourceBytes are s.resources as resourcesFromFuzz reads them. Each entry
// is l(imits) or r(equests), then c(pu), m(emory), e(phemeral-storage) or x
// (example.com/widget), "=", and a quantity as the Robot's YAML gives it.
func (s robotSeed) resourceBytes() []byte {
	var out []byte
	for entry := range strings.SplitSeq(s.resources, ",") {
		if entry == "" {
			continue
		}
		key, value, _ := strings.Cut(entry, "=")
		b := byte(strings.IndexByte("cmex", key[1]) << 1)
		if key[0] == 'r' {
			b |= 1
		}
		out = append(out, robottest.EncodeFuzzInput(b, byte(0), value)...)
	}
	return out
}

// robotSeeds are typical Robots, and a few that once found bugs.
func robotSeeds() []robotSeed {
	return []robotSeed{
		{image: "registry.example/robot:1.0", replicas: 2, hasReplicas: true, port: 8080, hasPort: true,
			env: robottest.EncodeFuzzInput(envValue, "MODE", "demo")},
		{name: "minimal", image: "robot"},
		{name: "every.field", deploymentName: "robot-runner", image: "ghcr.io/acme/robot@sha256:" + strings.Repeat("0123456789abcdef", 4), replicas: 0, hasReplicas: true,
			port: 65535, hasPort: true, args: []string{"serve", "--verbose", "", "--name=$(POD)"},
			env: robottest.EncodeFuzzInput(
				envValue, "MODE", "prod",
				envValue, "EMPTY", "",
				envFieldRef, "POD", byte(0), byte(0),
				envFieldRef, "NODE", byte(3), byte(1),
				envConfigMapKeyRef, "FROM_CM", byte(1), "config.key", byte(2),
				envSecretKeyRef, "FROM_SECRET", byte(0), "password", byte(0),
				envResourceFieldRef, "CPU_LIMIT", byte(0), byte(1),
				envFileKeyRef, "FROM_FILE", "KEY", byte(0), byte(0)),
			resources: "lc=500m,lm=128Mi,rc=0.25,rm=64Mi,le=1Gi"},
		{image: "robot:latest", replicas: 1000, hasReplicas: true, port: 1, hasPort: true, args: []string{"\u00fcber", "a\nb", `"quoted"`},
			env: robottest.EncodeFuzzInput(envValue, "weird name.with-dots", "$(MODE) \u2028 \x00", envValue, "lower", "1")},
		// Quantities the API server stores in another form.
		{image: "robot:1", resources: "lc=1000m,lm=1.5Gi,rc=0.5,rm=0.5Gi,re=1e3,le=2e3"},
		// Limits alone, and an extended resource.
		{image: "robot:1", resources: "lc=2,lm=1G,lx=1,rx=1"},
		// Quantities finer than the thousandths the API server keeps.
		{image: "robot:1", resources: "rc=100u,lc=1.2336,rm=0.5m,lm=1e-3"},
	}
}

// robotFromFuzz decodes a Robot, as the operator's informer would see it,
// from the fuzz input. It returns why when the CRD would refuse the Robot
// (or robotFromFuzz cannot make one of the input): such Robots never reach
// the operator.
func robotFromFuzz(t *testing.T, name, deploymentName, image string, replicas int32, hasReplicas bool, port int32, hasPort bool,
	args, env, resources []byte) (*robotv1beta1.Robot, string) {
	t.Helper()
	if name == "" {
		name = "test"
	}
	robot := &robotv1beta1.Robot{
		TypeMeta:   metav1.TypeMeta{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID("robot-uid"), Generation: 1},
		Spec: robotv1beta1.RobotSpec{
			Image:          image,
			DeploymentName: deploymentName,
			// The CRD's default.
			Replicas: ptr.To[int32](1),
		},
	}
	if hasReplicas {
		robot.Spec.Replicas = &replicas
	}
	if hasPort {
		// What robot.dev/v1alpha1's port becomes; workloadFromFuzz adds
		// more.
		robot.Spec.Ports = []robotv1beta1.RobotPort{{Name: workload.PortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	}
	if len(args) > 0 {
		robot.Spec.Args = strings.Split(string(args), "\x00")
	}
	robot.Spec.Env = envFromFuzz(env)
	var skip string
	if robot.Spec.Resources, skip = resourcesFromFuzz(t, resources); skip != "" {
		return nil, skip
	}
	// The Robot as its JSON reaches the API server and comes back to the
	// operator: strings are UTF-8 from here on.
	robot = robottest.DecodedAgain(t, robot)
	return robot, crdRefuses(robot)
}

var (
	// The CRD's rules, as in pkg/apis/robot/v1beta1/types.go.
	imageSpace       = regexp.MustCompile(`[[:space:]]`)
	deploymentNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// The pattern the CRD gives a quantity (from corev1's OpenAPI).
	quantityPattern = regexp.MustCompile(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)
)

// crdRefuses says why the API server refuses robot under the CRD's schema,
// or returns "".
func crdRefuses(robot *robotv1beta1.Robot) string {
	spec := &robot.Spec
	switch {
	case len(validation.IsDNS1123Subdomain(robot.Name)) > 0 || len(robot.Name) > 63:
		return "metadata.name"
	case utf8.RuneCountInString(spec.Image) < 1 || utf8.RuneCountInString(spec.Image) > 512 || imageSpace.MatchString(spec.Image):
		return "spec.image"
	case spec.Replicas != nil && (*spec.Replicas < 0 || *spec.Replicas > 1000):
		return "spec.replicas"
	case spec.DeploymentName != "" && (len(spec.DeploymentName) > 63 || !deploymentNameRE.MatchString(spec.DeploymentName)):
		return "spec.deploymentName"
	case slices.ContainsFunc(spec.Ports, func(p robotv1beta1.RobotPort) bool { return p.ContainerPort < 1 || p.ContainerPort > 65535 }):
		return "spec.ports: containerPort"
	case len(spec.Args) > 256:
		return "spec.args"
	case len(spec.Env) > 256:
		return "spec.env"
	}
	// listType=map: one entry per name.
	names := map[string]bool{}
	for _, e := range spec.Env {
		if names[e.Name] {
			return "spec.env: a name twice"
		}
		names[e.Name] = true
	}
	// The CRD's rules on the image, the resources, the env and the probes,
	// which the Go validation repeats.
	for _, err := range []error{
		robotv1beta1.ValidateImage("spec.image", spec.Image),
		robotv1beta1.ValidateResources("spec.resources", spec.Resources),
		robotv1beta1.ValidateEnv("spec", spec.Env, spec.EnvFrom),
		robotv1beta1.ValidateProbes("spec", spec.ReadinessProbe, spec.LivenessProbe, spec.StartupProbe),
	} {
		if err != nil {
			return err.Error()
		}
	}
	return ""
}

// The kinds of env var envFromFuzz decodes.
const (
	envValue byte = iota
	envFieldRef
	envConfigMapKeyRef
	envSecretKeyRef
	envResourceFieldRef
	envFileKeyRef
	envKinds
)

var (
	envFieldPaths    = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.podIP", "status.podIPs", "metadata.labels['app.kubernetes.io/name']", "metadata.annotations['example.com/a']"}
	envRefNames      = []string{"config", "app-secret", "a.b.c"}
	envResources     = []string{"limits.cpu", "requests.cpu", "limits.memory", "requests.memory", "limits.ephemeral-storage", "requests.ephemeral-storage"}
	envDivisors      = []string{"", "1", "1m", "1000m", "1Mi", "1k", "0.001"}
	envFileVolumes   = []string{"env-files", "config"}
	envFilePaths     = []string{"env", "sub/dir/vars.env"}
	envOptionalKinds = []*bool{nil, ptr.To(false), ptr.To(true)}
)

// envFromFuzz decodes env vars from data (see robottest.FuzzBytes): for each, its
// kind, its name, and what the kind needs.
func envFromFuzz(data []byte) []corev1.EnvVar {
	b := &robottest.FuzzBytes{Data: data}
	var env []corev1.EnvVar
	for b.More() && len(env) <= 256 {
		kind, name := b.Byte()%envKinds, b.String()
		e := corev1.EnvVar{Name: name}
		switch kind {
		case envValue:
			e.Value = b.String()
		case envFieldRef:
			ref := &corev1.ObjectFieldSelector{FieldPath: robottest.Pick(b, envFieldPaths)}
			if b.Byte()%2 == 1 {
				ref.APIVersion = "v1"
			}
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: ref}
		case envConfigMapKeyRef:
			ref := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, envRefNames)}, Key: b.String()}
			ref.Optional = robottest.Pick(b, envOptionalKinds)
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: ref}
		case envSecretKeyRef:
			ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, envRefNames)}, Key: b.String()}
			ref.Optional = robottest.Pick(b, envOptionalKinds)
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: ref}
		case envResourceFieldRef:
			ref := &corev1.ResourceFieldSelector{Resource: robottest.Pick(b, envResources)}
			if divisor := robottest.Pick(b, envDivisors); divisor != "" {
				ref.Divisor = resource.MustParse(divisor)
			}
			e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: ref}
		case envFileKeyRef:
			ref := &corev1.FileKeySelector{Key: b.String(), VolumeName: robottest.Pick(b, envFileVolumes), Path: robottest.Pick(b, envFilePaths)}
			// The CRD defaults optional to false.
			ref.Optional = cmp.Or(robottest.Pick(b, envOptionalKinds), ptr.To(false))
			e.ValueFrom = &corev1.EnvVarSource{FileKeyRef: ref}
		}
		env = append(env, e)
	}
	return env
}

// resourcesFromFuzz decodes resources from data (see robottest.FuzzBytes): for each,
// a byte that says limits or requests (bit 0) and which resource (cpu,
// memory, ephemeral-storage or the extended example.com/widget), then a
// quantity as the Robot's YAML may give it: either any string, or a number
// with a decimal point and a suffix, which reaches the forms the API server
// stores differently sooner. It returns why when the CRD refuses one.
func resourcesFromFuzz(t *testing.T, data []byte) (corev1.ResourceRequirements, string) {
	t.Helper()
	var out corev1.ResourceRequirements
	b := &robottest.FuzzBytes{Data: data}
	for b.More() {
		key := b.Byte()
		list := &out.Limits
		if key&1 == 1 {
			list = &out.Requests
		}
		name := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "example.com/widget"}[key>>1%4]
		var value string
		if b.Byte()%2 == 0 {
			value = b.String()
		} else {
			value = decimal(uint16(b.Byte())<<8|uint16(b.Byte()), int(b.Byte()%6)) + robottest.Pick(b, quantitySuffixes)
		}
		if !quantityPattern.MatchString(value) {
			return out, "a quantity does not match the CRD's pattern"
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			// The CRD's pattern, corev1's, admits a few strings
			// that ParseQuantity refuses, such as "1e1.5"
			// (kubernetes-sigs/controller-tools#665). Such a Robot
			// never reaches workload.NewDeployment: the operator's informer
			// cannot decode it. Only a rule in the CRD can keep it
			// out.
			return out, fmt.Sprintf("the operator cannot decode the quantity %q: %v", value, err)
		}
		if dec := q.DeepCopy(); -dec.AsDec().Scale() > 1000 {
			// Far beyond any machine; comparing it with another
			// quantity (as deploymentRejected does) takes seconds.
			return out, "a quantity above 10^1000"
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q
	}
	return out, ""
}

var quantitySuffixes = []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3", "e-7", "E+2"}

// decimal writes n with places digits after the decimal point.
func decimal(n uint16, places int) string {
	digits := fmt.Sprintf("%0*d", places+1, n)
	if places == 0 {
		return digits
	}
	return digits[:len(digits)-places] + "." + digits[len(digits)-places:]
}

// storedAfterApply returns desired as the API server stores it after the apply, with
// what other writers set next to it (chosen by the bits of foreign), and as
// the operator's informer decodes it. It returns why when the API server
// refuses it: a Robot the CRD admits may still ask for a Deployment the API
// server's validation refuses (an env var named "A=B" or "", a request above
// its limit). No such Deployment is ever stored, so none can drift: the apply
// gets a 422, which syncDeployment reports as InvalidSpec.
func storedAfterApply(t *testing.T, robot *robotv1beta1.Robot, desired any, foreign uint8) (*appsv1.Deployment, string) {
	t.Helper()
	// The apply request, as the API server decodes it.
	var d appsv1.Deployment
	if err := workload.RoundTrip(desired, &d); err != nil {
		t.Fatal(err)
	}
	addForeignFields(&d, robot, foreign)
	robottest.APIServerDefaults(&d)
	if reason := deploymentRejected(&d); reason != "" {
		return nil, "the API server refuses the Deployment: " + reason
	}
	d.UID = "deployment-uid"
	d.ResourceVersion = "7"
	d.Generation = 1
	d.CreationTimestamp = metav1.NewTime(robottest.FixtureNow)
	// The Deployment controller's.
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas}
	return robottest.Decoded(t, &d), ""
}

// addForeignFields adds to d what other writers (kubectl, a mutating
// webhook, a service mesh) set in fields the Robot does not, one kind per
// bit of which.
func addForeignFields(d *appsv1.Deployment, robot *robotv1beta1.Robot, which uint8) {
	pod := &d.Spec.Template.Spec
	c := &pod.Containers[0]
	if which&(1<<0) != 0 {
		name := "INJECTED"
		for slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
			name += "_"
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: "1"})
	}
	if which&(1<<1) != 0 {
		d.Annotations["example.com/owner"] = "team-a"
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-22T12:00:00Z"
	}
	if which&(1<<2) != 0 {
		pod.Containers = append(pod.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/proxy:1",
			Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}}})
		// And an init container, as a mesh's injector adds one.
		pod.InitContainers = append(pod.InitContainers, corev1.Container{Name: "mesh-init", Image: "registry.example/mesh-init:1"})
	}
	if which&(1<<3) != 0 {
		d.Labels["team"] = "blue"
		if _, ok := robot.Spec.PodLabels["team"]; !ok {
			d.Spec.Template.Labels["team"] = "blue"
		}
	}
	if which&(1<<4) != 0 {
		// Requests defaulted from limits. The API server does this for
		// Pods only (core/v1 SetDefaults_Pod), not for the template of
		// a Deployment; a webhook might.
		for name, limit := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				c.Resources.Requests[name] = limit.DeepCopy()
			}
		}
	}
	if which&(1<<5) != 0 {
		port := int32(9090)
		for slices.ContainsFunc(robot.Spec.Ports, func(p robotv1beta1.RobotPort) bool { return p.ContainerPort == port }) {
			port++
		}
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: port})
	}
	if which&(1<<6) != 0 {
		_, limit := robot.Spec.Resources.Limits[corev1.ResourceEphemeralStorage]
		_, request := robot.Spec.Resources.Requests[corev1.ResourceEphemeralStorage]
		if !limit && !request {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("2Gi")
		}
	}
	if which&(1<<7) != 0 {
		// Only where the Robot leaves the field unset: a field both set
		// is a conflict, which the apply settles in the operator's favour.
		if robot.Spec.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullAlways
		}
		c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
		pod.SecurityContext.RunAsNonRoot = ptr.To(true)
		if robot.Spec.ServiceAccountName == "" {
			pod.ServiceAccountName = "robot"
		}
	}
	// The volumes a file key reference needs: without one the API server
	// refuses the Deployment, and the operator does not create volumes.
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FileKeyRef != nil &&
			!slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == e.ValueFrom.FileKeyRef.VolumeName }) {
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: e.ValueFrom.FileKeyRef.VolumeName,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
}

// deploymentRejected says why the API server's validation refuses d, already
// defaulted, or returns "". It checks what the Robot's fields and
// addForeignFields' additions can get wrong; the rest of what the operator
// sets is always valid.
func deploymentRejected(d *appsv1.Deployment) string {
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
		return "spec.replicas"
	}
	for _, c := range slices.Concat(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers) {
		if c.Image == "" {
			return "image: required"
		}
		names := map[string]bool{}
		type key struct {
			port     int32
			protocol corev1.Protocol
		}
		keys := map[key]bool{}
		for _, p := range c.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 {
				return "containerPort"
			}
			if p.Name != "" && names[p.Name] {
				return "a container port's name twice"
			}
			if keys[key{p.ContainerPort, p.Protocol}] {
				return "a container port's number and protocol twice"
			}
			names[p.Name], keys[key{p.ContainerPort, p.Protocol}] = true, true
		}
		for _, e := range c.Env {
			// Any printable ASCII but '=', not only C identifiers,
			// since RelaxedEnvironmentVariableValidation went GA
			// (v1.34).
			if msgs := validation.IsRelaxedEnvVarName(e.Name); len(msgs) > 0 {
				return fmt.Sprintf("env name %q: %s", e.Name, msgs[0])
			}
			if reason := envSourceRejected(e); reason != "" {
				return fmt.Sprintf("env %q: %s", e.Name, reason)
			}
		}
		if reason := resourcesRejected(c.Resources); reason != "" {
			return reason
		}
	}
	return strategyRejected(d.Spec)
}

// strategyRejected: apps validation's ValidateDeploymentStrategy and its
// check of the progress deadline, for the strategies and minReadySeconds
// workloadFromFuzz makes, once defaulted.
func strategyRejected(spec appsv1.DeploymentSpec) string {
	strategy := spec.Strategy
	if strategy.Type == appsv1.RecreateDeploymentStrategyType && strategy.RollingUpdate != nil {
		return "spec.strategy.rollingUpdate with Recreate"
	}
	if rolling := strategy.RollingUpdate; rolling != nil {
		zero := func(v *intstr.IntOrString) bool { return v.Type == intstr.Int && v.IntVal == 0 || v.StrVal == "0%" }
		if zero(rolling.MaxSurge) && zero(rolling.MaxUnavailable) {
			return "spec.strategy.rollingUpdate: maxSurge and maxUnavailable both 0"
		}
		if rolling.MaxUnavailable.Type == intstr.String {
			if percent, err := strconv.Atoi(strings.TrimSuffix(rolling.MaxUnavailable.StrVal, "%")); err != nil || percent > 100 {
				return "spec.strategy.rollingUpdate.maxUnavailable"
			}
		}
	}
	if spec.ProgressDeadlineSeconds != nil && *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
		return "spec.progressDeadlineSeconds: not above minReadySeconds"
	}
	return ""
}

// envSourceRejected: what core validation's validateEnvVarValueFrom refuses
// among the sources envFromFuzz makes.
func envSourceRejected(e corev1.EnvVar) string {
	from := e.ValueFrom
	switch {
	case from == nil:
		return ""
	case e.Value != "":
		return "valueFrom with a value"
	case from.ConfigMapKeyRef != nil:
		return keyRejected(from.ConfigMapKeyRef.Key)
	case from.SecretKeyRef != nil:
		return keyRejected(from.SecretKeyRef.Key)
	case from.FileKeyRef != nil:
		if msgs := validation.IsRelaxedEnvVarName(from.FileKeyRef.Key); len(msgs) > 0 {
			return "fileKeyRef.key: " + msgs[0]
		}
	case from.ResourceFieldRef != nil:
		divisor := from.ResourceFieldRef.Divisor
		if divisor.IsZero() {
			return ""
		}
		allowed := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
		if strings.HasSuffix(from.ResourceFieldRef.Resource, ".cpu") {
			allowed = []string{"1m", "1"}
		}
		if !slices.Contains(allowed, divisor.String()) {
			return "resourceFieldRef.divisor " + divisor.String()
		}
	}
	return ""
}

func keyRejected(key string) string {
	if key == "" {
		return "key: required"
	}
	if msgs := validation.IsConfigMapKey(key); len(msgs) > 0 {
		return "key: " + msgs[0]
	}
	return ""
}

// resourcesRejected: core validation's validateResourceRequirements, for
// the resources resourcesFromFuzz makes.
func resourcesRejected(r corev1.ResourceRequirements) string {
	extended := func(name corev1.ResourceName) bool { return strings.Contains(string(name), "/") }
	for _, list := range []corev1.ResourceList{r.Limits, r.Requests} {
		for name, q := range list {
			if q.Sign() < 0 {
				return fmt.Sprintf("resources: %s is negative", name)
			}
			if extended(name) && q.MilliValue()%1000 != 0 {
				return fmt.Sprintf("resources: %s must be an integer", name)
			}
		}
	}
	for name, request := range r.Requests {
		limit, ok := r.Limits[name]
		switch {
		case !ok && extended(name):
			return fmt.Sprintf("resources: %s needs a limit", name)
		case ok && extended(name) && request.Cmp(limit) != 0:
			return fmt.Sprintf("resources: %s request must equal its limit", name)
		case ok && request.Cmp(limit) > 0:
			return fmt.Sprintf("resources: %s request above its limit", name)
		}
	}
	return ""
}

// The fields the Robot sets that changeOwnedField changes.
const (
	ownedReplicas = iota
	ownedImage
	ownedEnv
	ownedArgs
	ownedPort
	ownedResources
	ownedWorkload // one of the pod template fields, chosen by number
	ownedFields
)

// changeOwnedField changes, in d, one field that robot sets, chosen by
// which; value and number say how. It returns what it did, or "" when robot
// does not set that field.
func changeOwnedField(robot *robotv1beta1.Robot, d *appsv1.Deployment, which uint8, value string, number int32) string {
	c := &d.Spec.Template.Spec.Containers[0]
	index := func(n int) int { return int(uint32(number) % uint32(n)) }
	different := func(old string) string {
		if value == old {
			return old + "x"
		}
		return value
	}
	switch which % ownedFields {
	case ownedReplicas:
		n := max(number, -(number + 1)) // not negative
		if n == *d.Spec.Replicas {
			n = (n + 1) % 1001
		}
		d.Spec.Replicas = &n
		return fmt.Sprintf("replicas set to %d", n)
	case ownedImage:
		c.Image = different(c.Image)
		return fmt.Sprintf("image set to %q", c.Image)
	case ownedEnv:
		if len(robot.Spec.Env) == 0 {
			return ""
		}
		name := robot.Spec.Env[index(len(robot.Spec.Env))].Name
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		e := &c.Env[i]
		switch {
		case number < 0:
			c.Env = slices.Delete(c.Env, i, i+1)
			return fmt.Sprintf("env %q removed", name)
		case e.ValueFrom != nil:
			e.ValueFrom, e.Value = nil, value
			if e.Value == "" {
				e.Value = "x"
			}
			return fmt.Sprintf("env %q set to the value %q instead of its source", name, e.Value)
		case e.Value == "":
			// Not owned: the apply leaves out an empty value (the
			// field is omitempty), so server-side apply gives the
			// operator only the variable's name, and a value someone
			// else sets is theirs. Applying "value": "" explicitly
			// would need the drift check to take a missing value for
			// an empty one; see kubernetes/kubernetes#128924 for how
			// server-side apply treats such empty values.
			return ""
		default:
			e.Value = different(e.Value)
			return fmt.Sprintf("env %q set to %q", name, e.Value)
		}
	case ownedArgs:
		if len(c.Args) == 0 {
			return ""
		}
		i := index(len(c.Args))
		switch uint32(number) % 3 {
		case 0:
			c.Args[i] = different(c.Args[i])
			return fmt.Sprintf("arg %d set to %q", i, c.Args[i])
		case 1:
			c.Args = slices.Delete(c.Args, i, i+1)
			return fmt.Sprintf("arg %d removed", i)
		default:
			c.Args = append(c.Args, value)
			return fmt.Sprintf("arg %q appended", value)
		}
	case ownedPort:
		if len(robot.Spec.Ports) == 0 {
			return ""
		}
		name := robot.Spec.Ports[index(len(robot.Spec.Ports))].Name
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
		switch {
		case number < 0 && number%2 == 0:
			c.Ports[i].Protocol = map[corev1.Protocol]corev1.Protocol{corev1.ProtocolTCP: corev1.ProtocolUDP, corev1.ProtocolUDP: corev1.ProtocolSCTP, corev1.ProtocolSCTP: corev1.ProtocolTCP}[c.Ports[i].Protocol]
			return fmt.Sprintf("port %q's protocol set to %s", name, c.Ports[i].Protocol)
		case number < 0:
			c.Ports[i].Name = "renamed"
			if name == "renamed" {
				c.Ports[i].Name = "renamed-again"
			}
			return fmt.Sprintf("port %q renamed %q", name, c.Ports[i].Name)
		}
		p := 1 + number%65535
		if p == c.Ports[i].ContainerPort {
			p = p%65535 + 1
		}
		c.Ports[i].ContainerPort = p
		return fmt.Sprintf("port %q set to %d", name, p)
	case ownedResources:
		type entry struct {
			list corev1.ResourceList
			kind string
			name corev1.ResourceName
		}
		var set []entry
		for _, kind := range []struct {
			name        string
			robot, live corev1.ResourceList
		}{{"limits", robot.Spec.Resources.Limits, c.Resources.Limits}, {"requests", robot.Spec.Resources.Requests, c.Resources.Requests}} {
			for _, name := range slices.Sorted(maps.Keys(kind.robot)) {
				set = append(set, entry{kind.live, kind.name, name})
			}
		}
		if len(set) == 0 {
			return ""
		}
		e := set[index(len(set))]
		q := e.list[e.name]
		step := resource.MustParse("1m")
		if strings.Contains(string(e.name), "/") || e.name == corev1.ResourceMemory || e.name == corev1.ResourceEphemeralStorage {
			step = resource.MustParse("1")
		}
		if number < 0 && q.Cmp(step) >= 0 {
			q.Sub(step)
		} else {
			q.Add(step)
		}
		e.list[e.name] = q
		return fmt.Sprintf("%s.%s set to %s", e.kind, e.name, q.String())
	case ownedWorkload:
		return changeWorkloadField(robot, d, number)
	}
	return ""
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
