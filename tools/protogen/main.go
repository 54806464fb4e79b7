// Command protogen writes kubesim/api/proto_tables.c: the field tables kubesim's protobuf
// reader (kubesim/api/proto.c) uses to turn the built-in kinds that Go clients send as
// application/vnd.kubernetes.protobuf (controller-runtime does so for every client-go type)
// into the JSON kubesim stores. The tables come from the protobuf and json struct tags of
// k8s.io/api, read by reflection, so field numbers, JSON names and pointer-ness match the
// Go types exactly. Run `make proto-tables` after changing the version or the kinds below.
package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type root struct {
	apiVersion, kind string
	t                reflect.Type
}

var roots = []root{
	{"v1", "ConfigMap", reflect.TypeOf(corev1.ConfigMap{})},
	{"v1", "Secret", reflect.TypeOf(corev1.Secret{})},
	{"v1", "Namespace", reflect.TypeOf(corev1.Namespace{})},
	{"v1", "ServiceAccount", reflect.TypeOf(corev1.ServiceAccount{})},
	{"v1", "Pod", reflect.TypeOf(corev1.Pod{})},
	{"v1", "Service", reflect.TypeOf(corev1.Service{})},
	{"v1", "Endpoints", reflect.TypeOf(corev1.Endpoints{})},
	{"v1", "Event", reflect.TypeOf(corev1.Event{})},
	{"v1", "PersistentVolumeClaim", reflect.TypeOf(corev1.PersistentVolumeClaim{})},
	{"batch/v1", "Job", reflect.TypeOf(batchv1.Job{})},
	{"rbac.authorization.k8s.io/v1", "Role", reflect.TypeOf(rbacv1.Role{})},
	{"rbac.authorization.k8s.io/v1", "RoleBinding", reflect.TypeOf(rbacv1.RoleBinding{})},
	{"networking.k8s.io/v1", "Ingress", reflect.TypeOf(networkingv1.Ingress{})},
	{"networking.k8s.io/v1", "NetworkPolicy", reflect.TypeOf(networkingv1.NetworkPolicy{})},
	{"coordination.k8s.io/v1", "Lease", reflect.TypeOf(coordinationv1.Lease{})},
	{"events.k8s.io/v1", "Event", reflect.TypeOf(eventsv1.Event{})},
	{"policy/v1", "PodDisruptionBudget", reflect.TypeOf(policyv1.PodDisruptionBudget{})},
}

var (
	tQuantity = reflect.TypeOf(resource.Quantity{})
	tIntStr   = reflect.TypeOf(intstr.IntOrString{})
	tTime     = reflect.TypeOf(metav1.Time{})
	tMicro    = reflect.TypeOf(metav1.MicroTime{})
	tDuration = reflect.TypeOf(metav1.Duration{})
	tRaw      = reflect.TypeOf(runtime.RawExtension{})
	tFields   = reflect.TypeOf(metav1.FieldsV1{})
	tMeta     = reflect.TypeOf(metav1.ObjectMeta{})
	serverSet = map[string]bool{"selfLink": true, "creationTimestamp": true,
		"deletionTimestamp": true, "managedFields": true}
)

type field struct {
	num      int
	name     string
	ftype    string // F_* of proto.c
	sub      string // table name for messages
	keepZero bool
}

var (
	order  []string
	tables = map[string][]field{}
	ident  = map[reflect.Type]string{}
)

func cname(t reflect.Type) string {
	p := strings.Split(t.PkgPath(), "/")
	pkg := p[len(p)-1]
	if len(p) >= 2 {
		pkg = p[len(p)-2] + p[len(p)-1]
	}
	return "m_" + strings.ReplaceAll(pkg, ".", "") + "_" + t.Name()
}

// scalar maps a non-message Go type to a proto.c field type ("" when it is a message).
func scalar(t reflect.Type) string {
	switch t {
	case tQuantity:
		return "F_QUANTITY"
	case tIntStr:
		return "F_INT_OR_STRING"
	case tTime:
		return "F_TIME"
	case tMicro:
		return "F_MICROTIME"
	case tDuration:
		return "F_DURATION"
	case tRaw:
		return "F_RAW"
	case tFields:
		return "F_SKIP"
	}
	switch t.Kind() {
	case reflect.String:
		return "F_STRING"
	case reflect.Bool:
		return "F_BOOL"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Int16, reflect.Uint16:
		return "F_INT64"
	case reflect.Float64, reflect.Float32:
		return "F_SKIP_STRICT"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "F_BYTES"
		}
	}
	return ""
}

func visit(t reflect.Type) string {
	if n, ok := ident[t]; ok {
		return n
	}
	n := cname(t)
	ident[t] = n
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		pt := sf.Tag.Get("protobuf")
		if pt == "" || pt == "-" {
			continue
		}
		parts := strings.Split(pt, ",")
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			panic(pt)
		}
		js := strings.Split(sf.Tag.Get("json"), ",")
		jname := js[0]
		omit := false
		for _, o := range js[1:] {
			if o == "omitempty" {
				omit = true
			}
		}
		if jname == "-" {
			continue
		}
		f := field{num: num, name: jname}
		if jname == "" { // json:",inline": a message whose fields sit in the parent's JSON object
			if sf.Type.Kind() != reflect.Struct {
				panic(t.Name() + "." + sf.Name)
			}
			f.ftype, f.sub = "F_INLINE", visit(sf.Type)
			fs = append(fs, f)
			continue
		}
		ft := sf.Type
		ptr := false
		if ft.Kind() == reflect.Ptr {
			ptr = true
			ft = ft.Elem()
		}
		f.keepZero = ptr || !omit
		if t == tMeta && serverSet[jname] {
			f.ftype = "F_SKIP" // the server sets these; a client's copy is ignored
			fs = append(fs, f)
			continue
		}
		switch {
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				panic(t.Name() + "." + sf.Name)
			}
			vt := ft.Elem()
			switch s := scalar(vt); s {
			case "F_STRING":
				f.ftype = "F_MAP_STR"
			case "F_BYTES":
				f.ftype = "F_MAP_BYTES"
			case "F_QUANTITY":
				f.ftype = "F_MAP_QUANTITY"
			default:
				if vt.Kind() == reflect.Struct && s == "" {
					f.ftype, f.sub = "F_MAP_MSG", visit(vt)
				} else {
					f.ftype = "F_SKIP_STRICT"
				}
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
			et := ft.Elem()
			if et.Kind() == reflect.Ptr {
				et = et.Elem()
			}
			switch s := scalar(et); s {
			case "F_STRING":
				f.ftype = "F_REP_STRING"
			case "F_INT64":
				f.ftype = "F_REP_INT64"
			case "":
				f.ftype, f.sub = "F_REP_MSG", visit(et)
			default:
				f.ftype = "F_SKIP_STRICT"
			}
		default:
			if s := scalar(ft); s != "" {
				f.ftype = s
			} else if ft.Kind() == reflect.Struct {
				f.ftype, f.sub = "F_MSG", visit(ft)
			} else {
				panic(t.Name() + "." + sf.Name)
			}
		}
		fs = append(fs, f)
	}
	sort.Slice(fs, func(a, b int) bool { return fs[a].num < fs[b].num })
	tables[n] = fs
	order = append(order, n)
	return n
}

func main() {
	var rootNames []string
	for _, r := range roots {
		rootNames = append(rootNames, visit(r.t))
	}
	w := &strings.Builder{}
	fmt.Fprintf(w, "/*\n * proto_tables.c - GENERATED by tools/protogen (make proto-tables) from the struct tags of\n"+
		" * k8s.io/api %s: for each message, its fields' protobuf numbers, JSON names and\n"+
		" * the reader's field type. Read by kubesim/api/proto.c. Do not edit.\n */\n", os.Args[1])
	fmt.Fprintf(w, "#include \"kubesim/api/internal.h\"\n\n")
	for _, n := range order {
		fmt.Fprintf(w, "extern const struct pmsg %s;\n", n)
	}
	fmt.Fprintln(w)
	for _, n := range order {
		fs := tables[n]
		if len(fs) == 0 {
			fmt.Fprintf(w, "const struct pmsg %s = { NULL, 0, true };\n", n)
			continue
		}
		fmt.Fprintf(w, "static const struct pfield %s_f[] = {\n", n)
		for _, f := range fs {
			sub := "NULL"
			if f.sub != "" {
				sub = "&" + f.sub
			}
			fmt.Fprintf(w, "    { %d, \"%s\", %s, %s, %v },\n", f.num, f.name, f.ftype, sub, f.keepZero)
		}
		fmt.Fprintf(w, "};\nconst struct pmsg %s = { %s_f, %d, true };\n", n, n, len(fs))
	}
	fmt.Fprintf(w, "\nconst struct proto_kind proto_kinds[] = {\n")
	for i, r := range roots {
		fmt.Fprintf(w, "    { \"%s\", \"%s\", &%s },\n", r.apiVersion, r.kind, rootNames[i])
	}
	fmt.Fprintf(w, "};\nconst size_t proto_kinds_n = %d;\n", len(roots))
	os.Stdout.WriteString(w.String())
}
