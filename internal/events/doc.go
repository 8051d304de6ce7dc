// Package events records the operator's Events through a gate that asks the
// write fence before each write, and flushes what was recorded before a
// shutdown returns, so that no Event is lost and none is written after this
// process stopped leading. Once remembers which Warnings that hold at every
// sync were recorded already, so that each is recorded once.
package events
