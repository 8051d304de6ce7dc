package transform

// Workloads is the Deployment and Service informers' transform.
func Workloads(obj interface{}) (interface{}, error) {
	return TrimManagedFields(obj)
}
