// Package workload decides what a Robot asks for: the Deployment and the
// Service that the operator applies for it, as apply configurations holding
// exactly the fields the operator owns, with their names, labels and spec
// hash, and the validation that refuses a spec no Deployment can hold.
//
// It is pure: it reads a Robot and returns objects, and imports no client.
package workload
