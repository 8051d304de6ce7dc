// Package robotclient builds the Robot clientset with a decoder that reads a
// Robot whose stored spec cannot be decoded as its metadata and an
// annotation, so that one bad Robot is reported InvalidSpec instead of
// stopping the informer for all of them.
package robotclient
