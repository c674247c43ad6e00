// Command protoschema writes, as JSON on stdout, the protobuf schema table kube-cache-proxy's
// encoder (src/apimachinery/protobuf/) uses to write the apiserver's protobuf bytes from a cached
// JSON object. It walks, with reflect, the Go types of every kind registered in client-go's
// scheme (k8s.io/api), kube-aggregator's apiregistration and apiextensions-apiserver's
// apiextensions, plus the meta.k8s.io kinds the apiserver answers (PartialObjectMetadata[List],
// WatchEvent), at the versions this module pins, reading the `protobuf:"…"` struct tags.
//
// The generated.proto files do not say which Go fields are pointers (written only when set)
// and which are values (always written, zero included), nor which types marshal JSON their own
// way; the Go types do, so the table comes from them. For every message type it lists the fields
// in field-number order (the generated marshalers write them in that order):
//
//	[number, jsonName, kind, flags, elem?, mapValueKind?, mapValueElem?]
//
// kind is the wire shape (string, bytes, bool, int32, int64, uint32, uint64, double, float,
// message); flags: p = Go pointer, r = repeated (slice), m = map (key kind string), i = JSON
// inline (the embedded struct's fields sit in the parent's JSON object), n = map value is a Go
// pointer or nil-able byte slice; elem is a message type's name. Types with their own JSON form
// (json.Marshaler: metav1.Time, MicroTime, Duration, FieldsV1, resource.Quantity,
// intstr.IntOrString, runtime.RawExtension, apiextensions JSON…) are listed in "custom" under
// their type name, with their protobuf fields when they have tags: the encoder knows a fixed
// set of them and declines the others. Named slice types with a generated marshaler (e.g.
// certificates ExtraValue) are messages whose field 1 repeats the elements.
//
// usage: go run ./protoschema > src/apimachinery/protobuf/schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

type output struct {
	// Modules: the module versions the types come from.
	Modules map[string]string `json:"modules"`
	// Kinds: "group/version/Kind" ("v1/Pod" for the core group) → message type name.
	Kinds map[string]string `json:"kinds"`
	// Types: message type name → fields in field-number order.
	Types map[string][][]any `json:"types"`
	// Custom: type name → true for types with their own JSON form (json.Marshaler).
	Custom map[string]bool `json:"custom"`
	// JSONOnly: type name → JSON keys of fields without a protobuf tag (e.g. the inline
	// TypeMeta's kind and apiVersion of an embedded PersistentVolumeClaim): not written.
	JSONOnly map[string][]string `json:"jsonOnly"`
}

var (
	out = output{
		Modules:  map[string]string{},
		Kinds:    map[string]string{},
		Types:    map[string][][]any{},
		Custom:   map[string]bool{},
		JSONOnly: map[string][]string{},
	}
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	sizedMarshal  = "MarshalToSizedBuffer"
)

func typeName(t reflect.Type) string {
	p := t.PkgPath()
	p = strings.TrimPrefix(p, "k8s.io/")
	return p + "." + t.Name()
}

func isCustomJSON(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
}

func hasGeneratedMarshal(t reflect.Type) bool {
	_, ok := t.MethodByName(sizedMarshal)
	if ok {
		return true
	}
	_, ok = reflect.PointerTo(t).MethodByName(sizedMarshal)
	return ok
}

// kindOf: the wire kind of a scalar Go type (after pointers/slices are peeled off).
func kindOf(t reflect.Type, wire string) (string, string) {
	switch t.Kind() {
	case reflect.String:
		return "string", ""
	case reflect.Bool:
		return "bool", ""
	case reflect.Int32:
		return "int32", ""
	case reflect.Int64, reflect.Int:
		return "int64", ""
	case reflect.Uint32:
		return "uint32", ""
	case reflect.Uint64:
		return "uint64", ""
	case reflect.Float64:
		return "double", ""
	case reflect.Float32:
		return "float", ""
	case reflect.Struct:
		visit(t)
		return "message", typeName(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", ""
		}
		if hasGeneratedMarshal(t) {
			visit(t)
			return "message", typeName(t)
		}
	}
	fail("unsupported Go type %s (wire %s)", t, wire)
	return "", ""
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "protoschema: "+f+"\n", a...)
	os.Exit(1)
}

// visit records the message type t (a struct, or a named slice with a generated marshaler).
func visit(t reflect.Type) {
	name := typeName(t)
	if _, done := out.Types[name]; done {
		return
	}
	out.Types[name] = nil // mark before recursing
	if isCustomJSON(t) {
		out.Custom[name] = true
	}
	var fields [][]any
	if t.Kind() == reflect.Slice {
		k, elem := kindOf(t.Elem(), "")
		fields = append(fields, row(1, "items", k, "r", elem))
		out.Types[name] = fields
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			// Not in the protobuf form: its JSON keys are known, and not written.
			jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case jsonName == "-" || !f.IsExported():
			case jsonName == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
				for j := 0; j < f.Type.NumField(); j++ {
					if sub := f.Type.Field(j); sub.IsExported() {
						n, _, _ := strings.Cut(sub.Tag.Get("json"), ",")
						out.JSONOnly[name] = append(out.JSONOnly[name], n)
					}
				}
			case jsonName == "":
				out.JSONOnly[name] = append(out.JSONOnly[name], f.Name)
			default:
				out.JSONOnly[name] = append(out.JSONOnly[name], jsonName)
			}
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			fail("%s.%s: bad protobuf tag %q", name, f.Name, tag)
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			fail("%s.%s: bad protobuf tag %q", name, f.Name, tag)
		}
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		flags := ""
		if jsonName == "" && f.Anonymous {
			flags += "i"
		}
		if jsonName == "" && !f.Anonymous {
			jsonName = f.Name
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			flags += "p"
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				fail("%s.%s: map key %s", name, f.Name, ft.Key())
			}
			vt := ft.Elem()
			vflags := ""
			if vt.Kind() == reflect.Pointer {
				vflags = "n"
				vt = vt.Elem()
			}
			vk, velem := kindOf(vt, f.Tag.Get("protobuf_val"))
			if vk == "bytes" {
				vflags = "n"
			}
			r := row(num, jsonName, "map", flags+"m"+vflags, "")
			r = append(r, vk, velem)
			fields = append(fields, r)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && !hasGeneratedMarshal(ft):
			et := ft.Elem()
			if et.Kind() == reflect.Pointer {
				fail("%s.%s: slice of pointers", name, f.Name)
			}
			k, elem := kindOf(et, parts[0])
			fields = append(fields, row(num, jsonName, k, flags+"r", elem))
		default:
			k, elem := kindOf(ft, parts[0])
			fields = append(fields, row(num, jsonName, k, flags, elem))
		}
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a][0].(int) < fields[b][0].(int) })
	if fields == nil {
		fields = [][]any{}
	}
	out.Types[name] = fields
}

func row(num int, jsonName, kind, flags, elem string) []any {
	r := []any{num, jsonName, kind, flags}
	if elem != "" {
		r = append(r, elem)
	} else if kind == "map" {
		r = append(r, "")
	}
	return r
}

func addScheme(s *runtime.Scheme) {
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || t.PkgPath() == "" {
			continue
		}
		if t.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" {
			continue // ListOptions, WatchEvent…: registered in every group, not served as objects
		}
		if !hasGeneratedMarshal(t) {
			continue // no protobuf form (the apiserver answers these in JSON only)
		}
		addKind(gvk, t)
	}
}

func addKind(gvk schema.GroupVersionKind, t reflect.Type) {
	key := gvk.Version + "/" + gvk.Kind
	if gvk.Group != "" {
		key = gvk.Group + "/" + key
	}
	visit(t)
	out.Kinds[key] = typeName(t)
}

func main() {
	addScheme(scheme.Scheme)
	extra := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		apiextensionsv1.AddToScheme, apiextensionsv1beta1.AddToScheme,
		apiregistrationv1.AddToScheme, apiregistrationv1beta1.AddToScheme,
	} {
		if err := add(extra); err != nil {
			fail("%v", err)
		}
	}
	addScheme(extra)
	for _, v := range []string{"v1", "v1beta1"} {
		gv := schema.GroupVersion{Group: "meta.k8s.io", Version: v}
		addKind(gv.WithKind("PartialObjectMetadata"), reflect.TypeFor[metav1.PartialObjectMetadata]())
		addKind(gv.WithKind("PartialObjectMetadataList"), reflect.TypeFor[metav1.PartialObjectMetadataList]())
	}
	addKind(schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "WatchEvent"}, reflect.TypeFor[metav1.WatchEvent]())
	addKind(schema.GroupVersionKind{Version: "v1", Kind: "Status"}, reflect.TypeFor[metav1.Status]())
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			switch m.Path {
			case "k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiextensions-apiserver", "k8s.io/kube-aggregator":
				out.Modules[m.Path] = m.Version
				if m.Replace != nil {
					out.Modules[m.Path] = m.Replace.Version
				}
			}
		}
	}
	write(out)
}

// write prints out as JSON with one kind or type per line (reviewable diffs), keys sorted.
func write(o output) {
	var b strings.Builder
	section := func(name string, m map[string]any, last bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "  %q: {\n", name)
		for i, k := range keys {
			v, err := json.Marshal(m[k])
			if err != nil {
				fail("%v", err)
			}
			sep := ","
			if i == len(keys)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "    %q: %s%s\n", k, v, sep)
		}
		if last {
			b.WriteString("  }\n")
		} else {
			b.WriteString("  },\n")
		}
	}
	anyMap := func(m any) map[string]any {
		r := map[string]any{}
		v := reflect.ValueOf(m)
		for _, k := range v.MapKeys() {
			r[k.String()] = v.MapIndex(k).Interface()
		}
		return r
	}
	b.WriteString("{\n")
	section("modules", anyMap(o.Modules), false)
	section("kinds", anyMap(o.Kinds), false)
	section("custom", anyMap(o.Custom), false)
	section("jsonOnly", anyMap(o.JSONOnly), false)
	section("types", anyMap(o.Types), true)
	b.WriteString("}\n")
	os.Stdout.WriteString(b.String())
}
