package gang

import v1 "k8s.io/api/core/v1"

// IndexName is the index by gang on a pod informer (IndexFunc; cache.Indexers{IndexName:
// IndexFunc}): a gang's pods by its Key's String, without listing every pod of the cluster.
const IndexName = "inapack.io/gang"

// IndexFunc indexes a pod by its gang (none for a pod of no gang).
func IndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	if k, ok := KeyOf(p); ok {
		return []string{k.String()}, nil
	}
	return nil, nil
}
