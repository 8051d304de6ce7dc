package workload

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// imageUser is what an image runs as when nothing in the pod says
// otherwise: its Dockerfile's USER, root when it has none. kwok runs no
// container, so no e2e test can find out; this table says what the
// examples rely on, and where it comes from.
type imageUser struct {
	uid, gid int64
	// listens is the TCP port the image serves on with its own
	// configuration, 0 when its arguments decide.
	listens int32
	source  string
}

// imageUsers are the images of artifacts/examples, by repository.
var imageUsers = map[string]imageUser{
	"docker.io/nginxinc/nginx-unprivileged": {uid: 101, gid: 101, listens: 8080,
		source: "github.com/nginx/docker-nginx-unprivileged, mainline/alpine/Dockerfile: ARG UID=101, ARG GID=101, USER $UID " +
			"(numeric, so nonRootot can check it; the image's user nginx has group 101); its default.conf listens on 8080"},
	"docker.io/library/busybox": {uid: 0, gid: 0,
		source: "github.com/docker-library/busybox: the Dockerfile sets no USER"},
	"registry.k8s.io/e2e-test-images/agnhost": {uid: 0, gid: 0,
		source: "github.com/kubernetes/kubernetes, test/images/agnhost/Dockerfile: no USER; netexec listens where --http-port says"},
}

// exampleRobots reads the Robots in the YAML files of artifacts/examples.
func exampleRobots(t *testing.T) map[string]*robotv1beta1.Robot {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "artifacts", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	robots := map[string]*robotv1beta1.Robot{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			document, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var kind struct{ Kind string }
			if err := yaml.Unmarshal(document, &kind); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if kind.Kind != "Robot" {
				continue
			}
			robot := &robotv1beta1.Robot{}
			if err := yaml.UnmarshalStrict(document, robot); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			robots[filepath.Base(file)+"/"+robot.Name] = robot
		}
	}
	return robots
}

// containerUser is whom a container of the pod runs as, and whether the
// kubelet is told to refuse it as root.
type containerUser struct {
	name     string
	image    imageUser
	uid, gid int64
	nonRoot  bool
	mounts   []corev1ac.VolumeMountApplyConfiguration
}

// podUsers returns whom each container of pod runs as: its own security
// context, then the pod's, then the image's default from imageUsers.
func podUsers(t *testing.T, example string, pod *corev1ac.PodSpecApplyConfiguration) []containerUser {
	t.Helper()
	podContext := ptr.Deref(pod.SecurityContext, corev1ac.PodSecurityContextApplyConfiguration{})
	var users []containerUser
	for _, c := range append(append([]corev1ac.ContainerApplyConfiguration{}, pod.InitContainers...), pod.Containers...) {
		image := ptr.Deref(c.Image, "")
		repository := image
		if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
			repository = image[:i]
		}
		defaults, known := imageUsers[repository]
		if !known {
			t.Errorf("%s: container %s runs %s, which the table of image users does not know: add whom it runs as, and where that is said", example, ptr.Deref(c.Name, ""), image)
			continue
		}
		containerContext := ptr.Deref(c.SecurityContext, corev1ac.SecurityContextApplyConfiguration{})
		users = append(users, containerUser{
			name:    ptr.Deref(c.Name, ""),
			image:   defaults,
			uid:     ptr.Deref(containerContext.RunAsUser, ptr.Deref(podContext.RunAsUser, defaults.uid)),
			gid:     ptr.Deref(containerContext.RunAsGroup, ptr.Deref(podContext.RunAsGroup, defaults.gid)),
			nonRoot: ptr.Deref(containerContext.RunAsNonRoot, ptr.Deref(podContext.RunAsNonRoot, false)),
			mounts:  c.VolumeMounts,
		})
	}
	return users
}

// TestExamplesRunAsTheirUsers: each container of each example, in the pod
// the operator makes of it, can do what it does as the user it runs as on
// a real kubelet. A container told to run as non-root has an image whose
// user is not root (the kubelet refuses it otherwise); an example whose
// images all run as non-root asks for Pod Security "restricted"; and the
// containers that write to one emptyDir run as one user. The Robot API
// sets no fsGroup, so the kubelet leaves an emptyDir world-writable, and a
// file one container makes there is its user's with mode 0644 under the
// usual umask: another user may read it, but not write it (nginx, as 101,
// cannot open a log file that a root sidecar created first).
func TestExamplesRunAsTheirUsers(t *testing.T) {
	robots := exampleRobots(t)
	if len(robots) < 3 {
		t.Errorf("read %d Robots from artifacts/examples, want the 3 there are", len(robots))
	}
	for example, robot := range robots {
		deployment, err := NewDeployment(robot)
		if err != nil {
			t.Errorf("%s: %v", example, err)
			continue
		}
		pod := deployment.Spec.Template.Spec
		users := podUsers(t, example, pod)

		allNonRoot := true
		for _, user := range users {
			if user.image.uid == 0 {
				allNonRoot = false
			}
			if user.nonRoot && user.uid == 0 {
				t.Errorf("%s: container %s must run as non-root, and runs as root: the kubelet refuses to start it", example, user.name)
			}
			if robot.Spec.SecurityProfile == robotv1beta1.SecurityProfileRestricted && !user.nonRoot {
				t.Errorf("%s: container %s is not nonRootot, which Pod Security \"restricted\" requires", example, user.name)
			}
		}
		if allNonRoot && robot.Spec.SecurityProfile != robotv1beta1.SecurityProfileRestricted {
			t.Errorf("%s: every image runs as non-root, and the example does not ask for securityProfile: restricted", example)
		}

		emptyDirs := map[string]bool{}
		for _, volume := range pod.Volumes {
			if volume.EmptyDir != nil {
				emptyDirs[ptr.Deref(volume.Name, "")] = true
			}
		}
		writers := map[string][]containerUser{}
		for _, user := range users {
			for _, mount := range user.mounts {
				if name := ptr.Deref(mount.Name, ""); emptyDirs[name] && !ptr.Deref(mount.ReadOnly, false) {
					writers[name] = append(writers[name], user)
				}
			}
		}
		for volume, users := range writers {
			for _, other := range users[1:] {
				if other.uid != users[0].uid {
					t.Errorf("%s: containers %s (uid %d) and %s (uid %d) both write to emptyDir %s: a file one of them makes there, the other cannot write",
						example, users[0].name, users[0].uid, other.name, other.uid, volume)
				}
			}
		}

		// The image listens where the Robot says it does, or no probe
		// nor Service reaches it.
		if len(users) == 0 {
			continue
		}
		main := users[len(users)-1]
		if main.image.listens != 0 {
			found := false
			for _, port := range robot.Spec.Ports {
				found = found || (port.ContainerPort == main.image.listens && robotv1beta1.PortProtocol(port) == corev1.ProtocolTCP)
			}
			if !found {
				t.Errorf("%s: %s listens on TCP port %d, which the Robot's ports do not name", example, robot.Spec.Image, main.image.listens)
			}
		}
	}
}
