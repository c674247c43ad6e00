// Command printcells prints the cells the apiserver's own printers (k8s.io/kubernetes
// pkg/printers/internalversion, Wide, as pkg/printers/storage's TableConvertor asks) give each
// object of a cases file, and of every variant of it with one field removed or set to null: the
// expectations of test/unit/printers/printer-cells.test.ts, which reads the cases file
// (test/unit/printers/printer-cells.json: {"cases":[{"kind","objects","list"}]}) and this
// command's results. Each object is decoded as the apiserver decodes a stored object
// (legacyscheme, the external version) and converted to the internal type WITHOUT defaulting
// (the cache holds what the apiserver wrote, defaults included; a field a variant removes
// stays removed). A "list" case prints its objects as one list (printStorageClassList's
// effective default). Regenerate after changing the cases or moving the fixture to another
// version:
//
//	cd test/apiserver && go run -mod=mod ./printcells < ../unit/printers/printer-cells.json > /tmp/p.json && mv /tmp/p.json ../unit/printers/printer-cells.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	"k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

type tcase struct {
	Resource string            `json:"resource"`
	List     bool              `json:"list,omitempty"`
	Objects  []json.RawMessage `json:"objects"`
}

// result: the cells of case Case's object (variant Path/Op, none for the object itself) or,
// for a list case, of each row.
type result struct {
	Case  int     `json:"case"`
	Path  []any   `json:"path,omitempty"`
	Op    string  `json:"op,omitempty"`
	Cells [][]any `json:"cells"`
	// Panic: the apiserver's printer panicked (an object validation never lets through, e.g. a
	// Resource metric without its resource): the apiserver answers 500; the port must not throw.
	Panic bool `json:"panic,omitempty"`
}

var gen = printers.NewTableGenerator().With(printersinternal.AddHandlers)

func internal(v any) runtime.Object {
	raw, _ := json.Marshal(v)
	obj, _, err := legacyscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		panic(err)
	}
	in, err := legacyscheme.Scheme.ConvertToVersion(obj, runtime.InternalGroupVersioner)
	if err != nil {
		panic(err)
	}
	return in
}

func cells(obj runtime.Object) (out [][]any, panicked bool) {
	defer func() {
		if recover() != nil {
			out, panicked = nil, true
		}
	}()
	t, err := gen.GenerateTable(obj, printers.GenerateOptions{Wide: true})
	if err != nil {
		panic(err)
	}
	out = [][]any{}
	for _, r := range t.Rows {
		out = append(out, r.Cells)
	}
	return out, false
}

// paths: every path of v (map keys sorted, array indices), depth first, parents first.
func paths(v any, at []any, out *[][]any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]any{}, at...), k)
			*out = append(*out, p)
			paths(x[k], p, out)
		}
	case []any:
		for i := range x {
			p := append(append([]any{}, at...), float64(i))
			*out = append(*out, p)
			paths(x[i], p, out)
		}
	}
}

// mutated: a deep copy of v with path removed ("delete": a key deleted, an element spliced out)
// or its value set to null ("null": map keys only).
func mutated(v any, path []any, op string) any {
	raw, _ := json.Marshal(v)
	var c any
	_ = json.Unmarshal(raw, &c)
	parent := c
	for _, p := range path[:len(path)-1] {
		switch k := p.(type) {
		case string:
			parent = parent.(map[string]any)[k]
		case float64:
			parent = parent.([]any)[int(k)]
		}
	}
	last := path[len(path)-1]
	switch k := last.(type) {
	case string:
		m := parent.(map[string]any)
		if op == "null" {
			m[k] = nil
		} else {
			delete(m, k)
		}
	case float64:
		// Splice: rebuild the parent's parent slot.
		arr := parent.([]any)
		next := append(append([]any{}, arr[:int(k)]...), arr[int(k)+1:]...)
		if len(path) == 1 {
			return next
		}
		return mutatedSet(c, path[:len(path)-1], next)
	}
	return c
}

func mutatedSet(root any, path []any, value any) any {
	parent := root
	for _, p := range path[:len(path)-1] {
		switch k := p.(type) {
		case string:
			parent = parent.(map[string]any)[k]
		case float64:
			parent = parent.([]any)[int(k)]
		}
	}
	switch k := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[k] = value
	case float64:
		parent.([]any)[int(k)] = value
	}
	return root
}

func main() {
	var in struct {
		Cases   []tcase  `json:"cases"`
		Results []result `json:"results"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	in.Results = nil
	for i, c := range in.Cases {
		if c.List {
			list := &storage.StorageClassList{}
			for _, raw := range c.Objects {
				var v any
				_ = json.Unmarshal(raw, &v)
				list.Items = append(list.Items, *internal(v).(*storage.StorageClass))
			}
			c, p := cells(list)
			in.Results = append(in.Results, result{Case: i, Cells: c, Panic: p})
			continue
		}
		var v any
		_ = json.Unmarshal(c.Objects[0], &v)
		c0, p0 := cells(internal(v))
		in.Results = append(in.Results, result{Case: i, Cells: c0, Panic: p0})
		var ps [][]any
		paths(v, nil, &ps)
		for _, p := range ps {
			if p[0] == "kind" || p[0] == "apiVersion" {
				continue
			}
			ops := []string{"delete"}
			if _, ok := p[len(p)-1].(string); ok {
				ops = append(ops, "null")
			}
			for _, op := range ops {
				c, panicked := cells(internal(mutated(v, p, op)))
				in.Results = append(in.Results, result{Case: i, Path: p, Op: op, Cells: c, Panic: panicked})
			}
		}
	}
	fmt.Println("{\"cases\": [")
	for i, c := range in.Cases {
		b := marshal(c)
		sep := ","
		if i == len(in.Cases)-1 {
			sep = ""
		}
		fmt.Printf("  %s%s\n", b, sep)
	}
	fmt.Println("], \"results\": [")
	for i, r := range in.Results {
		b := marshal(r)
		sep := ","
		if i == len(in.Results)-1 {
			sep = ""
		}
		fmt.Printf("  %s%s\n", b, sep)
	}
	fmt.Println("]}")
}

// marshal: compact JSON without Go's HTML escapes (the cases stay readable).
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
