// Command crdcells prints the cells the apiextensions-apiserver's CRD Table convertor
// (pkg/registry/customresource/tableconvertor, client-go's jsonpath) gives each object for
// the given additionalPrinterColumns: the expectations of test/unit/printers/custom-resource.test.ts,
// whose cases file it reads on stdin ({"columns":[…],"objects":[…]}) and completes with "cells".
// Regenerate after changing the cases or moving the fixture to another version:
//
//	cd test/apiserver && go run -mod=mod ./crdcells < ../unit/printers/crd-cells.json > /tmp/c.json && mv /tmp/c.json ../unit/printers/crd-cells.json
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func main() {
	var in struct {
		Columns []apiextensionsv1.CustomResourceColumnDefinition `json:"columns"`
		Objects []json.RawMessage                                `json:"objects"`
		Cells   any                                              `json:"cells"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	c, err := tableconvertor.New(in.Columns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new:", err)
	}
	var out []any
	for _, raw := range in.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			panic(err)
		}
		t, err := c.ConvertToTable(context.Background(), u, &metav1.TableOptions{})
		if err != nil {
			panic(err)
		}
		out = append(out, t.Rows[0].Cells)
	}
	in.Cells = out
	b, _ := json.MarshalIndent(in, "", " ")
	fmt.Println(string(b))
}
