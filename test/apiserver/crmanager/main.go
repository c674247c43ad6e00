// Command crmanager runs a controller-runtime (sigs.k8s.io/controller-runtime) manager against a
// kubeconfig with two controllers: one on a typed object (policy/v1 PodDisruptionBudget) and one
// metadata-only (builder.OnlyMetadata on networking.k8s.io/v1 NetworkPolicy, i.e. a
// metav1.PartialObjectMetadata informer), and prints,
// as JSON lines on stdout, what its caches saw. Tests compare its output through kube-cache-proxy
// with its output against the apiserver directly.
//
// The rest.Config is the kubeconfig's, unchanged: controller-runtime's own defaults apply (the
// typed client asks for protobuf for built-in kinds, the metadata client sends client-go's
// metadata Accept, protobuf first), as a real operator's manager does. Leader election, the
// metrics server and the health probe listener are off.
//
// Stdin drives it: a line "dump" prints the current stores; EOF (or SIGTERM/SIGINT) prints them
// and exits 0.
//
// Two kinds no other test file uses, so the apiserver's request metrics for them are the test's.
//
// Output lines (kind is "PodDisruptionBudget" or "NetworkPolicy"):
//
//	{"type":"synced","elapsedMs":12}
//	{"type":"ADDED|MODIFIED|DELETED","kind":"PodDisruptionBudget","key":"ns/name","rv":"123","initial":true}
//	{"type":"reconcile","kind":"NetworkPolicy","key":"ns/name","rv":"123"}  (rv "" when not found)
//	{"type":"store","kind":"PodDisruptionBudget","items":[{"key":"ns/name","rv":"123"}],"count":1}
//	{"type":"dumped"}                                                       (after each pair of stores)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type line map[string]any

var outMu sync.Mutex

func emit(l line) {
	b, _ := json.Marshal(l)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintln(os.Stdout, string(b))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crmanager: "+format+"\n", args...)
	os.Exit(2)
}

var netpolGVK = networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy")

// metaNetpol is the object the metadata-only watch caches: a PartialObjectMetadata of a NetworkPolicy.
func metaNetpol() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(netpolGVK)
	return o
}

// reconciler prints each request it gets and the resourceVersion the cache has for it.
type reconciler struct {
	c    client.Reader
	kind string
	obj  func() client.Object
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o := r.obj()
	rv := ""
	if err := r.c.Get(ctx, req.NamespacedName, o); err == nil {
		rv = o.GetResourceVersion()
	} else if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	emit(line{"type": "reconcile", "kind": r.kind, "key": req.String(), "rv": rv})
	return reconcile.Result{}, nil
}

func main() {
	namespaces := flag.String("namespaces", "", "comma-separated namespaces the cache is restricted to (empty: cluster-wide)")
	syncTimeout := flag.Duration("sync-timeout", 60*time.Second, "fail if the caches are not synced within this time")
	quiet := flag.Bool("quiet", false, "do not print events and reconciles")
	flag.Parse()
	// --kubeconfig is controller-runtime's own flag (pkg/client/config registers it).
	kubeconfig := os.Getenv("KUBECONFIG")
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		kubeconfig = f.Value.String()
	}

	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fail("kubeconfig %q: %v", kubeconfig, err)
	}
	opts := manager.Options{
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	if *namespaces != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range strings.Split(*namespaces, ",") {
			opts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		fail("manager: %v", err)
	}

	synced := false
	var syncMu sync.Mutex
	isInitial := func() bool { syncMu.Lock(); defer syncMu.Unlock(); return !synced }

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()

	watches := []struct {
		kind string
		obj  func() client.Object
		list func() client.ObjectList
		opts []builder.ForOption
		for_ client.Object
	}{
		{
			kind: "PodDisruptionBudget",
			obj:  func() client.Object { return &policyv1.PodDisruptionBudget{} },
			list: func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} },
			for_: &policyv1.PodDisruptionBudget{},
		},
		{
			kind: "NetworkPolicy",
			obj:  func() client.Object { return metaNetpol() },
			list: func() client.ObjectList {
				l := &metav1.PartialObjectMetadataList{}
				l.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicyList"))
				return l
			},
			opts: []builder.ForOption{builder.OnlyMetadata},
			for_: &networkingv1.NetworkPolicy{},
		},
	}
	for _, w := range watches {
		kind := w.kind
		if err := ctrl.NewControllerManagedBy(mgr).
			For(w.for_, w.opts...).
			Named(strings.ToLower(kind)).
			Complete(&reconciler{c: mgr.GetCache(), kind: kind, obj: w.obj}); err != nil {
			fail("controller %s: %v", kind, err)
		}
		if *quiet {
			continue
		}
		inf, err := mgr.GetCache().GetInformer(ctx, w.obj())
		if err != nil {
			fail("informer %s: %v", kind, err)
		}
		report := func(typ string, obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				emit(line{"type": typ, "kind": kind, "key": d.Key, "rv": "", "tombstone": true})
				return
			}
			o, ok := obj.(client.Object)
			if !ok {
				return
			}
			emit(line{"type": typ, "kind": kind, "key": o.GetNamespace() + "/" + o.GetName(), "rv": o.GetResourceVersion(), "initial": isInitial()})
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { report("ADDED", obj) },
			UpdateFunc: func(_, obj any) { report("MODIFIED", obj) },
			DeleteFunc: func(obj any) { report("DELETED", obj) },
		}); err != nil {
			fail("handler %s: %v", kind, err)
		}
	}

	dump := func() {
		for _, w := range watches {
			l := w.list()
			if err := mgr.GetCache().List(context.Background(), l); err != nil {
				fail("list %s from the cache: %v", w.kind, err)
			}
			items := []line{}
			switch l := l.(type) {
			case *policyv1.PodDisruptionBudgetList:
				for i := range l.Items {
					items = append(items, line{"key": l.Items[i].Namespace + "/" + l.Items[i].Name, "rv": l.Items[i].ResourceVersion})
				}
			case *metav1.PartialObjectMetadataList:
				for i := range l.Items {
					items = append(items, line{"key": l.Items[i].Namespace + "/" + l.Items[i].Name, "rv": l.Items[i].ResourceVersion})
				}
			}
			sort.Slice(items, func(i, j int) bool { return items[i]["key"].(string) < items[j]["key"].(string) })
			emit(line{"type": "store", "kind": w.kind, "items": items, "count": len(items)})
		}
		emit(line{"type": "dumped"})
	}

	start := time.Now()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, *syncTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		fail("caches not synced within %s", *syncTimeout)
	}
	syncMu.Lock()
	synced = true
	syncMu.Unlock()
	emit(line{"type": "synced", "elapsedMs": time.Since(start).Milliseconds()})

	stdinDone := make(chan struct{})
	dumpReq := make(chan struct{})
	go func() {
		defer close(stdinDone)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "dump" {
				dumpReq <- struct{}{}
			}
		}
	}()
	for {
		select {
		case <-dumpReq:
			dump()
		case <-stdinDone:
			dump()
			return
		case <-ctx.Done():
			dump()
			return
		case err := <-mgrDone:
			if err != nil {
				fail("manager: %v", err)
			}
			fail("manager stopped")
		}
	}
}
