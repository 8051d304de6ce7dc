// Package writer makes every write the operator makes for a Robot: the
// create, apply and delete of its Deployment and Service, and the apply of
// its status. Each write first asks the write fence, is remembered by the
// echo filter, and is announced by an Event. It builds the JSON patches it
// sends before an apply (the hand-over of the create's managedFields to the
// applies, the clearing of a rollingUpdate that an apply of Recreate cannot
// remove) and names the writer whose field made the API server refuse an
// apply. It decides nothing about what to write; the controller does.
package writer
