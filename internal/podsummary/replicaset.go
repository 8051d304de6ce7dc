package podsummary

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// RevisionAnnotation is the Deployment controller's revision, on a
// Deployment and on each of its ReplicaSets. The controller sets the
// Deployment's to its new ReplicaSet's before it reports the Deployment's
// generation observed.
const RevisionAnnotation = "deployment.kubernetes.io/revision"

// ReplicaSet is what the operator caches of a ReplicaSet of one of
// its Deployments: what tells the Deployment's current ReplicaSet, and what
// finds the Robot, nothing else. A Deployment keeps up to ten old
// ReplicaSets (revisionHistoryLimit), so a Robot may have eleven of them.
// The cache has no index of its own: a sync finds the ReplicaSets by the
// names its pods give (Pod.ReplicaSetKey), which costs no memory
// per ReplicaSet; a ReplicaSet of no pod controls none that the diagnosis
// could read.
type ReplicaSet struct {
	// Name, Namespace, ResourceVersion and DeletionTimestamp: the
	// informer keys and versions its objects by them.
	cachedMeta
	// UID is the one the controller reference of the ReplicaSet's pods
	// names.
	UID types.UID
	// Deployment and deploymentUID are the name and UID of the Deployment
	// that controls the ReplicaSet. The UID tells a ReplicaSet of the
	// Robot's Deployment from one of an earlier Deployment of the same
	// name, whose pods carry the same Robot name.
	Deployment    string
	deploymentUID types.UID
	// Revision is the ReplicaSet's RevisionAnnotation.
	Revision string
}

// GetUID is part of metav1.Object: the summary keeps the UID, which
// cachedMeta does not.
func (r *ReplicaSet) GetUID() types.UID { return r.UID }

// SetUID is part of metav1.Object.
func (r *ReplicaSet) SetUID(uid types.UID) { r.UID = uid }

// GetObjectKind is part of runtime.Object, so that the informer and its
// handlers treat a summary as any other cached object.
func (r *ReplicaSet) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is part of runtime.Object.
func (r *ReplicaSet) DeepCopyObject() runtime.Object {
	copied := *r
	if r.DeletionTimestamp != nil {
		copied.DeletionTimestamp = r.DeletionTimestamp.DeepCopy()
	}
	return &copied
}

// SummarizeReplicaSet turns a ReplicaSet into the ReplicaSet summary the
// cache keeps.
func SummarizeReplicaSet(obj interface{}) (interface{}, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		// A tombstone: its object was summarized when it was cached.
		return obj, nil
	}
	summary := &ReplicaSet{
		cachedMeta: cachedMeta{
			Name:              rs.Name,
			Namespace:         rs.Namespace,
			ResourceVersion:   rs.ResourceVersion,
			DeletionTimestamp: rs.DeletionTimestamp,
		},
		UID:      rs.UID,
		Revision: rs.Annotations[RevisionAnnotation],
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		summary.Deployment, summary.deploymentUID = prefixOf(rs.Name, ref.Name), ref.UID
	}
	return summary, nil
}

// Summarize is the transform of the informers of managed pods and
// ReplicaSets: SummarizePod or SummarizeReplicaSet, by the object's type.
func Summarize(obj interface{}) (interface{}, error) {
	if _, ok := obj.(*appsv1.ReplicaSet); ok {
		return SummarizeReplicaSet(obj)
	}
	return SummarizePod(obj)
}

// SameAs reports whether obj is a summary that says the same as r: a
// ReplicaSet's status changes at each of its pods' changes, and those
// tell the diagnosis nothing the pods' own events do not.
func (r *ReplicaSet) SameAs(obj interface{}) bool {
	other, ok := obj.(*ReplicaSet)
	if !ok {
		return false
	}
	return r.Name == other.Name && r.Namespace == other.Namespace && r.DeletionTimestamp.Equal(other.DeletionTimestamp) &&
		r.UID == other.UID && r.Deployment == other.Deployment && r.deploymentUID == other.deploymentUID && r.Revision == other.Revision
}

// OwnedBy reports whether r's controller is the Deployment of that UID.
func (r *ReplicaSet) OwnedBy(deployment types.UID) bool {
	return r.deploymentUID != "" && r.deploymentUID == deployment
}
