// Package writer makes every write the operator makes for a Robot: the
// create, apply and delete of its Deployment and Service, and the apply of
// its status. Each write first asks the write fence, is remembered by the
// echo filter, and is announced by an Event. It decides nothing about what to
// write; the controller does.
package writer
