package webhookcert

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// TestSecretWatchOnDelete: a deleted Secret tells the Manager at once (so
// that it makes the Secret again), and the replica goes on serving the
// certificate it has.
func TestSecretWatchOnDelete(t *testing.T) {
	secret := shippedSecret()
	secret.Data = mustCheck(t, nil, hosts, start).Data
	client := fake.NewClientset(secret)
	// The fake clientset drops what happens between a list and the watch
	// that follows it: the Secret is deleted only once the watch is open.
	watching := make(chan struct{})
	var opened sync.Once
	client.PrependWatchReactor("secrets", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		opened.Do(func() { close(watching) })
		return true, w, err
	})
	source := &Source{}
	secretWatch := NewSecretWatch(client, namespace, secretName, source)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = secretWatch.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitChanged := func(what string) {
		t.Helper()
		select {
		case <-secretWatch.Changed():
		case <-time.After(10 * time.Second):
			t.Fatalf("no change reported after %s", what)
		}
	}
	waitChanged("the Secret was added")
	served, err := source.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the Secret was never watched")
	}
	if err := client.CoreV1().Secrets(namespace).Delete(context.Background(), secretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChanged("the Secret was deleted")
	if after, err := source.GetCertificate(nil); err != nil || after != served {
		t.Errorf("after the Secret was deleted the webhook serves %v (%v), want the certificate it had", after, err)
	}
}
