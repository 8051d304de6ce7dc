// Package writer makes every write the operator makes for a Robot: the
// create, apply, patch and delete of each object it owns (Objects, one per
// kind, described by a Kind), and the apply of its status (Writer). Each
// write first asks the write fence, is remembered by the echo filter, and is
// announced by an Event; every apply and delete names the object's UID. The
// writers own what they remember (the echo filters, the spec-check memo):
// the controller asks them, and nothing else changes it. The package builds
// the JSON patches sent before an apply (the hand-over of the create's
// managedFields to the applies, the clearing of a rollingUpdate that an
// apply of Recreate cannot remove) and names the writer whose field made the
// API server refuse an apply. It decides nothing about what to write.
package writer
