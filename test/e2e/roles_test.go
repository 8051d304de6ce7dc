//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// TestBuiltInRolesCoverRobots: after an install of the shipped manifests, a
// namespace user works with Robots through the cluster's built-in roles, with
// no RBAC of their own: one bound to edit (or admin) may create, change,
// scale and delete Robots, and one bound to view may read them but not
// create one. The operator's ClusterRoles aggregate into those roles.
func TestBuiltInRolesCoverRobots(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	users := map[string]string{"robot-editor": "edit", "robot-admin": "admin", "robot-viewer": "view"}
	for user, role := range users {
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := env.kube.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s to %s: %v", user, role, err)
		}
	}

	writes := []string{"create", "update", "patch", "delete"}
	reads := []string{"get", "list", "watch"}
	type ask struct {
		user, verb, subresource string
		want                    bool
	}
	var asks []ask
	for _, user := range []string{"robot-editor", "robot-admin"} {
		for _, verb := range append(writes, reads...) {
			asks = append(asks, ask{user, verb, "", true})
		}
		asks = append(asks, ask{user, "update", "scale", true}, ask{user, "patch", "scale", true})
	}
	for _, verb := range reads {
		asks = append(asks, ask{"robot-viewer", verb, "", true})
	}
	for _, verb := range writes {
		asks = append(asks, ask{"robot-viewer", verb, "", false})
	}
	asks = append(asks, ask{"robot-viewer", "update", "scale", false})

	// The cluster's aggregation controller fills the built-in roles in a
	// moment after the ClusterRoles appear.
	eventually(t, convergeTimeout, "the built-in roles allow what they should on Robots", func(ctx context.Context) (bool, string, error) {
		var wrong []string
		for _, a := range asks {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: a.user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: a.verb, Group: "robot.dev", Resource: "robots", Subresource: a.subresource,
				},
			}}
			answer, err := env.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return false, "", err
			}
			if answer.Status.Allowed != a.want {
				wrong = append(wrong, fmt.Sprintf("%s (%s) %s robots%s: allowed %v", a.user, users[a.user], a.verb,
					map[bool]string{true: "/" + a.subresource}[a.subresource != ""], answer.Status.Allowed))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; "), nil
	})

	// And for real, through the API server, as each user.
	if _, err := robotsAs(t, "robot-editor").RobotV1beta1().Robots(ns).Create(t.Context(), newRobot(ns, "edited", 1), metav1.CreateOptions{}); err != nil {
		t.Errorf("robot-editor (edit) could not create a Robot: %v", err)
	}
	_, err := robotsAs(t, "robot-viewer").RobotV1beta1().Robots(ns).Create(t.Context(), newRobot(ns, "viewed", 1), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("robot-viewer (view) creating a Robot: %v, want Forbidden", err)
	}
	if _, err := robotsAs(t, "robot-viewer").RobotV1beta1().Robots(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("robot-viewer (view) could not list Robots: %v", err)
	}
}

// robotsAs returns a Robot client that acts as user, by impersonation.
func robotsAs(t *testing.T, user string) clientset.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName = user
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
