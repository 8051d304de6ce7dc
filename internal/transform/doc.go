// Package transform holds the informer transforms that keep the caches
// small: managedFields trimmed to what the controller reads or dropped, and
// strings that every object repeats shared.
package transform
