package noderunner

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/fieldpath"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// Lookup reads the ConfigMap and Secret keys an environment refers to (nil: none may be).
type Lookup interface {
	ConfigMapKey(namespace, name, key string) (string, bool, error)
	SecretKey(namespace, name, key string) (string, bool, error)
}

// Env is a container's environment as the kubelet builds it: variables in their declared order,
// each value's $(VAR) references expanded with the variables declared before it (an unknown
// reference stays as written, $$ is a literal $), valueFrom resolved from the pod (fieldRef:
// metadata.name, .namespace, .uid, .labels['k'], .annotations['k'], spec.nodeName,
// spec.serviceAccountName) or from ConfigMap and Secret keys. An optional key that is missing
// leaves its variable out.
func Env(pod *v1.Pod, c *v1.Container, lookup Lookup) ([]v1.EnvVar, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not supported by the node runner", c.Name)
	}
	vals := map[string]string{}
	var order []string
	mapping := expansion.MappingFuncFor(vals)
	for _, e := range c.Env {
		val := e.Value
		if val != "" {
			val = expansion.Expand(val, mapping)
		} else if f := e.ValueFrom; f != nil {
			var ok bool
			var err error
			switch {
			case f.FieldRef != nil:
				val, err = fieldRef(pod, f.FieldRef.FieldPath)
				ok = true
			case f.ConfigMapKeyRef != nil && lookup != nil:
				r := f.ConfigMapKeyRef
				val, ok, err = lookup.ConfigMapKey(pod.Namespace, r.Name, r.Key)
				if err == nil && !ok && (r.Optional == nil || !*r.Optional) {
					err = fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)
				}
			case f.SecretKeyRef != nil && lookup != nil:
				r := f.SecretKeyRef
				val, ok, err = lookup.SecretKey(pod.Namespace, r.Name, r.Key)
				if err == nil && !ok && (r.Optional == nil || !*r.Optional) {
					err = fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)
				}
			default:
				err = fmt.Errorf("this valueFrom is not supported by the node runner")
			}
			if err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
			if !ok {
				continue
			}
		}
		if _, seen := vals[e.Name]; !seen {
			order = append(order, e.Name)
		}
		vals[e.Name] = val
	}
	out := make([]v1.EnvVar, 0, len(order))
	for _, k := range order {
		out = append(out, v1.EnvVar{Name: k, Value: vals[k]})
	}
	return out, nil
}

// fieldRef is a downward-API field of the pod.
func fieldRef(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs":
		return "", fmt.Errorf("fieldRef %s: emulated hosts have no pod network; the operator's inapack.io/ip annotation is the address", path)
	}
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

// Argv is the container's command line as the kubelet runs it: command then args, each with its
// $(VAR) references expanded from env. The node runner has no images, so a container without a
// command (the image's entrypoint) cannot run.
func Argv(c *v1.Container, env []v1.EnvVar) ([]string, error) {
	if len(c.Command) == 0 {
		return nil, fmt.Errorf("container %s has no command: the node runner has no image entrypoints", c.Name)
	}
	vals := map[string]string{}
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	mapping := expansion.MappingFuncFor(vals)
	var argv []string
	for _, s := range slices.Concat(c.Command, c.Args) {
		argv = append(argv, expansion.Expand(s, mapping))
	}
	return argv, nil
}

// environ is env as a process environment, after base (the image's own, e.g. PATH): a declared
// variable replaces base's of the same name.
func environ(base []string, env []v1.EnvVar) []string {
	out := make([]string, 0, len(base)+len(env))
	declared := map[string]bool{}
	for _, e := range env {
		declared[e.Name] = true
	}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !declared[k] {
			out = append(out, kv)
		}
	}
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}
