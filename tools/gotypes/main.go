// Command gotypes writes the Go JSON layout of KubeRay's RayClusterSpec (and every
// type it reaches) as a C table: kobj/gotypes_table.c. The RayService
// controller marshals a RayClusterSpec from that table byte for byte as Go's
// encoding/json does, so its cluster hash equals KubeRay's (docs/rayservice.md, "Hash").
//
// Usage: tools/gotypes/gen.sh KUBERAY_CHECKOUT (copies KubeRay's API types into a
// temporary package next to this file; nothing of them is kept). With "-hash" it instead
// reads a rayClusterConfig (JSON) on stdin and prints KubeRay's hash of it, computed the way
// KubeRay computes it (the value tests pin, e.g. tests/integration/rayservice_takeover.sh).
package main

import (
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"io"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "gotypes/rayv1"
)

type field struct {
	json  string
	flags []string
	typ   int
}

type gtype struct {
	name   string
	kind   string
	elem   int
	fields []field
}

var (
	types []*gtype
	index = map[reflect.Type]int{}
)

var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

func special(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(resource.Quantity{}):
		return "GT_QUANTITY"
	case reflect.TypeOf(intstr.IntOrString{}):
		return "GT_INTORSTR"
	case reflect.TypeOf(metav1.Time{}), reflect.TypeOf(metav1.MicroTime{}):
		return "GT_TIME"
	case reflect.TypeOf(runtime.RawExtension{}):
		return "GT_RAW"
	}
	return ""
}

func add(t reflect.Type) int {
	if i, ok := index[t]; ok {
		return i
	}
	g := &gtype{name: t.String()}
	i := len(types)
	types = append(types, g)
	index[t] = i
	if s := special(t); s != "" {
		g.kind = s
		return i
	}
	if t.Kind() == reflect.Struct && (t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)) {
		// its own MarshalJSON (metav1.FieldsV1): written as the JSON it holds
		fmt.Fprintf(os.Stderr, "note: %s has its own MarshalJSON, written as raw JSON\n", t)
		g.kind = "GT_RAW"
		return i
	}
	switch t.Kind() {
	case reflect.String:
		g.kind = "GT_STRING"
	case reflect.Bool:
		g.kind = "GT_BOOL"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		g.kind = "GT_INT"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		g.kind = "GT_UINT"
	case reflect.Float32, reflect.Float64:
		g.kind = "GT_FLOAT"
	case reflect.Pointer:
		g.kind = "GT_PTR"
		g.elem = add(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			g.kind = "GT_BYTES"
		} else {
			g.kind = "GT_SLICE"
			g.elem = add(t.Elem())
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("map key " + t.String())
		}
		g.kind = "GT_MAP"
		g.elem = add(t.Elem())
	case reflect.Interface:
		g.kind = "GT_RAW"
	case reflect.Struct:
		g.kind = "GT_STRUCT"
		g.fields = fields(t)
	default:
		panic("kind " + t.String())
	}
	return i
}

// fields lists t's JSON fields in Go's order, embedded structs without a name inlined.
func fields(t reflect.Type) []field {
	var out []field
	for k := 0; k < t.NumField(); k++ {
		f := t.Field(k)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && special(f.Type) == "" {
			out = append(out, fields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		var flags []string
		for _, p := range parts[1:] {
			switch p {
			case "omitempty":
				flags = append(flags, "GF_OMITEMPTY")
			case "omitzero":
				flags = append(flags, "GF_OMITZERO")
			case "string":
				panic("string option on " + t.String() + "." + f.Name)
			}
		}
		out = append(out, field{json: name, flags: flags, typ: add(f.Type)})
	}
	return out
}

// hash prints GenerateHashWithoutReplicasAndWorkersToDelete(rayClusterSpecForHashing(spec))
// for the spec on stdin: the muted fields cleared, json.Marshal, SHA-1, base32hex.
func hash() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	var spec rayv1.RayClusterSpec
	if err := json.Unmarshal(in, &spec); err != nil {
		panic(err)
	}
	spec.Suspend = nil
	spec.UpgradeStrategy = nil
	spec.HeadGroupSpec.Template.Spec.Tolerations = nil
	spec.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas = nil, nil, nil
		g.ScaleStrategy.WorkersToDelete = nil
		g.Template.Spec.Tolerations = nil
		g.Template.Spec.SchedulingGates = nil
	}
	text, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	sum := sha1.Sum(text)
	fmt.Println(base32.HexEncoding.EncodeToString(sum[:]))
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-hash" {
		hash()
		return
	}
	root := add(reflect.TypeOf(rayv1.RayClusterSpec{}))
	w := os.Stdout
	fmt.Fprintln(w, "/*")
	fmt.Fprintln(w, " * gotypes_table.c - GENERATED by tools/gotypes (do not edit): the Go encoding/json")
	fmt.Fprintln(w, " * layout of KubeRay v1.7's RayClusterSpec (k8s.io/api v0.36) and every type it")
	fmt.Fprintln(w, " * reaches: per struct its JSON fields in declaration order with omitempty/omitzero.")
	fmt.Fprintln(w, " * Field names and order only; read by gotypes.c.")
	fmt.Fprintln(w, " */")
	fmt.Fprintln(w, "#include \"kobj/gotypes.h\"")
	fmt.Fprintln(w)
	for i, g := range types {
		if len(g.fields) == 0 {
			continue
		}
		fmt.Fprintf(w, "static const struct gofield f%d[] = { /* %s */\n", i, g.name)
		for _, f := range g.fields {
			fl := "0"
			if len(f.flags) > 0 {
				sort.Strings(f.flags)
				fl = strings.Join(f.flags, " | ")
			}
			fmt.Fprintf(w, "    { %q, %s, %d },\n", f.json, fl, f.typ)
		}
		fmt.Fprintln(w, "};")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "const struct gotype gotypes[] = {")
	for i, g := range types {
		fs, n := "NULL", 0
		if len(g.fields) > 0 {
			fs, n = fmt.Sprintf("f%d", i), len(g.fields)
		}
		fmt.Fprintf(w, "    /* %d */ { %s, %d, %s, %d }, /* %s */\n", i, g.kind, g.elem, fs, n, g.name)
	}
	fmt.Fprintln(w, "};")
	fmt.Fprintf(w, "const int gotypes_count = %d;\n", len(types))
	fmt.Fprintf(w, "const int gotypes_raycluster_spec = %d;\n", root)
}
