// Command informer-probe runs one client-go SharedInformer (dynamic) against a kubeconfig and
// prints, as JSON lines on stdout, every event its handler saw and finally the store
// (key + resourceVersion). Tests compare its output through kube-cache-proxy with its output
// against the apiserver directly.
//
// client-go's WatchListClient gate is read from the environment by client-go itself:
// KUBE_FEATURE_WatchListClient=true|false.
//
// --content-type=protobuf runs a typed informer (client-go's informers.SharedInformerFactory,
// built-in kinds only) over a rest.Config with ContentType "application/vnd.kubernetes.protobuf"
// and AcceptContentTypes "application/vnd.kubernetes.protobuf,application/json", as the kube
// components' configs do (--accept-content-types="" leaves it unset: client-go then sends
// "application/vnd.kubernetes.protobuf, */*"). The default, json, runs the dynamic informer.
// --metadata runs a metadata-only informer (k8s.io/client-go/metadata + metadatainformer:
// PartialObjectMetadata objects, the metadata client's own protobuf-first Accept).
//
// Output lines:
//
//	{"type":"synced","elapsedMs":12}
//	{"type":"ADDED|MODIFIED|DELETED","key":"ns/name","rv":"123","initial":true}
//	{"type":"store","items":[{"key":"ns/name","rv":"123"}],"count":1}
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const protobufType = "application/vnd.kubernetes.protobuf"

type line map[string]any

var outMu sync.Mutex

func emit(l line) {
	b, _ := json.Marshal(l)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintln(os.Stdout, string(b))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informer-probe: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig path")
	resource := flag.String("resource", "configmaps", "resource, e.g. pods, deployments.apps, widgets.example.com")
	namespace := flag.String("namespace", "", "restrict the informer to one namespace")
	duration := flag.Duration("duration", 5*time.Second, "how long to run after the initial sync")
	untilEOF := flag.Bool("until-stdin-eof", false, "run after the initial sync until stdin is closed (instead of --duration), so a test stops it on a condition, not after a time")
	syncTimeout := flag.Duration("sync-timeout", 60*time.Second, "fail if not synced within this time")
	quiet := flag.Bool("quiet", false, "do not print individual events")
	labelSelector := flag.String("label-selector", "", "label selector for the informer's LIST/WATCH")
	fieldSelector := flag.String("field-selector", "", "field selector for the informer's LIST/WATCH")
	contentType := flag.String("content-type", "json", "json (dynamic informer) or protobuf (typed informer, built-in kinds)")
	metadataOnly := flag.Bool("metadata", false, "run a metadata-only informer (k8s.io/client-go/metadata + metadatainformer: PartialObjectMetadata, its own protobuf-first Accept)")
	acceptTypes := flag.String("accept-content-types", protobufType+",application/json", "rest.Config AcceptContentTypes with --content-type=protobuf (empty: unset)")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig %q: %v", *kubeconfig, err)
	}
	switch *contentType {
	case "json":
	case "protobuf":
		cfg.ContentType = protobufType
		cfg.AcceptContentTypes = *acceptTypes
	default:
		fail("--content-type %q: want json or protobuf", *contentType)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		fail("discovery: %v", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gr := schema.ParseGroupResource(*resource)
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		fail("resource %q: %v", *resource, err)
	}
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = *labelSelector
		o.FieldSelector = *fieldSelector
	}
	var informer cache.SharedIndexInformer
	if *metadataOnly {
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			fail("metadata client: %v", err)
		}
		factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, *namespace, tweak)
		informer = factory.ForResource(gvr).Informer()
	} else if *contentType == "protobuf" {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			fail("client: %v", err)
		}
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(*namespace), informers.WithTweakListOptions(tweak))
		gi, err := factory.ForResource(gvr)
		if err != nil {
			fail("typed informer for %s: %v", gvr, err)
		}
		informer = gi.Informer()
	} else {
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			fail("client: %v", err)
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, tweak)
		informer = factory.ForResource(gvr).Informer()
	}

	synced := false
	var syncMu sync.Mutex
	isInitial := func() bool { syncMu.Lock(); defer syncMu.Unlock(); return !synced }
	report := func(typ string, obj any) {
		if *quiet {
			return
		}
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			emit(line{"type": typ, "key": d.Key, "rv": "", "tombstone": true})
			return
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		emit(line{"type": typ, "key": key, "rv": m.GetResourceVersion(), "initial": isInitial()})
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { report("ADDED", obj) },
		UpdateFunc: func(_, obj any) { report("MODIFIED", obj) },
		DeleteFunc: func(obj any) { report("DELETED", obj) },
	})
	if err != nil {
		fail("handler: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go informer.Run(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, *syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		fail("not synced within %s", *syncTimeout)
	}
	syncMu.Lock()
	synced = true
	syncMu.Unlock()
	emit(line{"type": "synced", "elapsedMs": time.Since(start).Milliseconds(), "gvr": gvr.String()})
	if *untilEOF {
		_, _ = io.Copy(io.Discard, os.Stdin)
	} else {
		time.Sleep(*duration)
	}

	items := []line{}
	for _, obj := range informer.GetStore().List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			fail("store object %T: %v", obj, err)
		}
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		items = append(items, line{"key": key, "rv": m.GetResourceVersion()})
	}
	sort.Slice(items, func(i, j int) bool { return items[i]["key"].(string) < items[j]["key"].(string) })
	emit(line{"type": "store", "items": items, "count": len(items)})
}
