// Command scheduler plays kube-scheduler's part against `gpupack serve` in
// the end-to-end tests and the client-side latency benchmark. It calls the
// extender the way kube-scheduler's HTTPExtender does (Go's net/http client
// with keep-alive, JSON bodies, one call at a time, the whole reply read) and,
// for the API learning mode, serves a small fake Kubernetes API (list, watch,
// binding, merge patch) for gpupack to read.
//
// Subcommands:
//
//	openb     write an openb subset as Kubernetes objects (nodes.json, pods.json)
//	          and as `gpupack simulate` inputs (nodes.csv, pods.csv, order.csv,
//	          node_rank.csv)
//	synth     write N empty 8-GPU A100 nodes and one pending 1-GPU pod
//	gangs     write a seeded mixed workload of gangs (gpupack.io/gang-* annotations)
//	          and single pods, as objects and as `gpupack simulate` inputs
//	fakeapi   serve nodes.json and pods.json as a Kubernetes API
//	schedule  schedule every pod of pods.json in order: filter, prioritize,
//	          the highest score (ties by node name), then bind
//	bench     filter + prioritize one pod many times; client-side quantiles
//	verify    check a fake API's pods against the binds a scheduler saw acknowledged
//	          (-gangs: and that no gang is bound below its minimum)
//	metric    print one series' value from the extender's /metrics
//	soak      many schedulers at once for a long time: pending pods from the API,
//	          filter, prioritize, bind, /metrics; quantiles and the server's RSS per interval
//	floor     an extender that does no work: each verb answers every call with the
//	          bytes of its first answer (every node passes, all score 10), the
//	          floor of the bench on a machine
//
// Only Go's standard library is used, so Debian's golang-go builds it offline.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scheduler openb|synth|gangs|fakeapi|schedule|bench|verify|metric|soak [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "openb":
		err = runOpenb(os.Args[2:])
	case "synth":
		err = runSynth(os.Args[2:])
	case "gangs":
		err = runGangs(os.Args[2:])
	case "fakeapi":
		err = runFakeAPI(os.Args[2:])
	case "schedule":
		err = runSchedule(os.Args[2:])
	case "bench":
		err = runBench(os.Args[2:])
	case "floor":
		err = runFloor(os.Args[2:])
	case "verify":
		err = runVerify(os.Args[2:])
	case "metric":
		err = runMetric(os.Args[2:])
	case "soak":
		err = runSoak(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}

// ---- Kubernetes objects ----------------------------------------------------

type object = map[string]interface{}

func nodeObject(name, product string, gpus int, cpuMilli, memMiB int64) object {
	alloc := object{"cpu": fmt.Sprintf("%dm", cpuMilli), "memory": fmt.Sprintf("%dMi", memMiB), "pods": "110"}
	labels := object{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
	if gpus > 0 {
		alloc["nvidia.com/gpu"] = strconv.Itoa(gpus)
		labels["nvidia.com/gpu.product"] = product
	}
	return object{
		"apiVersion": "v1", "kind": "Node",
		"metadata": object{"name": name, "labels": labels, "uid": "uid-" + name},
		"spec":     object{},
		"status": object{"capacity": alloc, "allocatable": alloc,
			"conditions": []object{{"type": "Ready", "status": "True"}}},
	}
}

// podObject: whole GPUs as nvidia.com/gpu, a share of one GPU as
// gpupack.io/gpu-milli, openb's model list as its own pod annotation.
func podObject(name string, cpuMilli, memMiB int64, numGPU, gpuMilli int, models string) object {
	res := object{"cpu": fmt.Sprintf("%dm", cpuMilli), "memory": fmt.Sprintf("%dMi", memMiB)}
	ann := object{}
	if numGPU > 0 && gpuMilli >= 1000 {
		res["nvidia.com/gpu"] = strconv.Itoa(numGPU)
	} else if numGPU > 0 {
		ann["gpupack.io/gpu-milli"] = strconv.Itoa(gpuMilli)
	}
	if models != "" {
		ann["alibabacloud.com/gpu-card-model"] = models
	}
	return object{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": object{"name": name, "namespace": "default", "uid": "uid-" + name, "annotations": ann},
		"spec": object{"schedulerName": "gpupack-scheduler",
			"containers": []object{{"name": "main", "image": "trainer:1",
				"resources": object{"limits": res, "requests": res}}}},
		"status": object{"phase": "Pending"},
	}
}

func writeList(path, kind string, items []object) error {
	return writeJSON(path, object{"apiVersion": "v1", "kind": kind,
		"metadata": object{"resourceVersion": "1"}, "items": items})
}

func writeJSON(path string, v interface{}) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readList(path string) ([]object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l struct {
		Items []object `json:"items"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return l.Items, nil
}

// readCluster reads a NodeList and a PodList, and indexes the nodes by name.
func readCluster(nodesPath, podsPath string) ([]object, []object, map[string]object, error) {
	nodes, err := readList(nodesPath)
	if err != nil {
		return nil, nil, nil, err
	}
	pods, err := readList(podsPath)
	if err != nil {
		return nil, nil, nil, err
	}
	byName := map[string]object{}
	for _, n := range nodes {
		byName[name(n)] = n
	}
	return nodes, pods, byName, nil
}

func meta(o object) object { m, _ := o["metadata"].(object); return m }
func name(o object) string { s, _ := meta(o)["name"].(string); return s }
func namespace(o object) string {
	if s, _ := meta(o)["namespace"].(string); s != "" {
		return s
	}
	return "default"
}
func uid(o object) string { s, _ := meta(o)["uid"].(string); return s }

// ---- openb / synth ---------------------------------------------------------

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func atoi64(path string, row int, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s:%d: %q is not an integer", path, row+1, s)
	}
	return v, nil
}

func runOpenb(args []string) error {
	fs := flag.NewFlagSet("openb", flag.ExitOnError)
	dir := fs.String("trace", "", "folder with openb_node_list_gpu_node.csv and openb_pod_list_default.csv")
	nNodes := fs.Int("nodes", 60, "first N nodes")
	nPods := fs.Int("pods", 450, "first N pods, in this order")
	out := fs.String("out", ".", "output folder")
	fs.Parse(args)
	nodeCSV := *dir + "/openb_node_list_gpu_node.csv"
	podCSV := *dir + "/openb_pod_list_default.csv"
	nodeRows, err := readCSV(nodeCSV)
	if err != nil {
		return err
	}
	podRows, err := readCSV(podCSV)
	if err != nil {
		return err
	}
	if len(nodeRows) <= *nNodes || len(podRows) <= *nPods {
		return fmt.Errorf("the trace has %d nodes and %d pods", len(nodeRows)-1, len(podRows)-1)
	}
	// Node CSV: sn,cpu_milli,memory_mib,gpu,model.
	var nodes []object
	rank := [][]string{{"node", "rank"}}
	for i, row := range nodeRows[1 : *nNodes+1] {
		cpu, err := atoi64(nodeCSV, i+1, row[1])
		if err != nil {
			return err
		}
		mem, err := atoi64(nodeCSV, i+1, row[2])
		if err != nil {
			return err
		}
		gpus, err := atoi64(nodeCSV, i+1, row[3])
		if err != nil {
			return err
		}
		nodes = append(nodes, nodeObject(row[0], row[4], int(gpus), cpu, mem))
		rank = append(rank, []string{row[0], strconv.Itoa(i)})
	}
	// Pod CSV: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...
	var pods []object
	order := [][]string{{"idx", "pod"}}
	for i, row := range podRows[1 : *nPods+1] {
		var v [4]int64
		for k := 0; k < 4; k++ {
			if v[k], err = atoi64(podCSV, i+1, row[1+k]); err != nil {
				return err
			}
		}
		pods = append(pods, podObject(row[0], v[0], v[1], int(v[2]), int(v[3]), row[5]))
		order = append(order, []string{strconv.Itoa(i), row[0]})
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, w := range []func() error{
		func() error { return writeList(*out+"/nodes.json", "NodeList", nodes) },
		func() error { return writeList(*out+"/pods.json", "PodList", pods) },
		func() error { return writeCSV(*out+"/nodes.csv", nodeRows[:*nNodes+1]) },
		func() error { return writeCSV(*out+"/pods.csv", podRows[:*nPods+1]) },
		func() error { return writeCSV(*out+"/order.csv", order) },
		func() error { return writeCSV(*out+"/node_rank.csv", rank) },
	} {
		if err := w(); err != nil {
			return err
		}
	}
	return nil
}

// runGangs writes a seeded workload of gangs and single pods on identical
// 8-GPU nodes: nodes.json and pods.json (gang members carry
// gpupack.io/gang-name, -size and -min-member), and the same as
// `gpupack simulate --mode dynamic` inputs (nodes.csv, pods.csv with the
// gang and gang_min_member columns, node_rank.csv in list order). Gang
// members are consecutive, in job order.
func runGangs(args []string) error {
	fs := flag.NewFlagSet("gangs", flag.ExitOnError)
	nNodes := fs.Int("nodes", 16, "8-GPU nodes")
	nJobs := fs.Int("jobs", 60, "jobs (gangs and single pods)")
	seed := fs.Int64("seed", 1, "workload seed")
	out := fs.String("out", ".", "output folder")
	coscheduling := fs.Bool("coscheduling", false, "instead: 2 nodes and pod groups in scheduler-plugins' form "+
		"(label scheduling.x-k8s.io/pod-group, podgroups.json with minMember): pg-short has 3 pods and "+
		"minMember 4, pg-ok 2 pods and minMember 2")
	competing := fs.Bool("competing", false, "instead: 2 nodes and two gangs of 3 x 4 GPUs (only one fits), "+
		"members interleaved a-0, b-0, a-1, ...")
	fs.Parse(args)
	rng := newRand(*seed)
	if *competing || *coscheduling {
		*nNodes = 2
	}
	const model, gpus, cpu, mem = "V100M32", 8, int64(96000), int64(786432)
	var nodes []object
	nodeRows := [][]string{{"sn", "cpu_milli", "memory_mib", "gpu", "model"}}
	rank := [][]string{{"node", "rank"}}
	for i := 0; i < *nNodes; i++ {
		n := fmt.Sprintf("node-%03d", i)
		node := nodeObject(n, model, gpus, cpu, mem)
		// Racks of 8 consecutive nodes, as `simulate --mode dynamic` makes them.
		meta(node)["labels"].(object)["gpupack.io/rack"] = fmt.Sprintf("rack-%d", i/8)
		nodes = append(nodes, node)
		nodeRows = append(nodeRows, []string{n, strconv.FormatInt(cpu, 10), strconv.FormatInt(mem, 10),
			strconv.Itoa(gpus), model})
		rank = append(rank, []string{n, strconv.Itoa(i)})
	}
	// (members, GPUs per member, milli per GPU): single pods, whole and
	// fractional, and gangs up to 4 x 8 GPUs.
	shapes := [][3]int{{1, 1, 1000}, {1, 1, 500}, {1, 2, 1000}, {1, 4, 1000}, {2, 4, 1000}, {2, 8, 1000},
		{3, 2, 1000}, {4, 8, 1000}, {4, 1, 1000}, {8, 2, 1000}}
	var pods []object
	podRows := [][]string{{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gang", "gang_min_member"}}
	if *coscheduling {
		var groups []object
		for _, g := range []struct {
			name          string
			pods, minimum int
		}{{"pg-short", 3, 4}, {"pg-ok", 2, 2}} {
			for m := 0; m < g.pods; m++ {
				p := podObject(fmt.Sprintf("%s-%d", g.name, m), 8000, 32768, 2, 1000, "")
				meta(p)["labels"] = object{"scheduling.x-k8s.io/pod-group": g.name}
				pods = append(pods, p)
			}
			groups = append(groups, object{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
				"metadata": object{"name": g.name, "namespace": "default"},
				"spec":     object{"minMember": g.minimum}})
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		if err := writeList(*out+"/podgroups.json", "PodGroupList", groups); err != nil {
			return err
		}
		*nJobs = 0
	}
	if *competing {
		for m := 0; m < 3; m++ {
			for _, g := range []string{"gang-a", "gang-b"} {
				p := podObject(fmt.Sprintf("%s-%d", g, m), 16000, 65536, 4, 1000, "")
				ann := meta(p)["annotations"].(object)
				ann["gpupack.io/gang-name"] = g
				ann["gpupack.io/gang-size"] = "3"
				ann["gpupack.io/gang-min-member"] = "3"
				pods = append(pods, p)
			}
		}
		*nJobs = 0
	}
	for j := 0; j < *nJobs; j++ {
		sh := shapes[rng.intn(len(shapes))]
		members, per, milli := sh[0], sh[1], sh[2]
		gang := ""
		if members > 1 {
			gang = fmt.Sprintf("job-%03d", j)
		}
		for m := 0; m < members; m++ {
			podName := fmt.Sprintf("job-%03d-%d", j, m)
			c, mm := int64(4000*per), int64(16384*per)
			p := podObject(podName, c, mm, per, milli, "")
			if gang != "" {
				ann := meta(p)["annotations"].(object)
				ann["gpupack.io/gang-name"] = gang
				ann["gpupack.io/gang-size"] = strconv.Itoa(members)
				ann["gpupack.io/gang-min-member"] = strconv.Itoa(members)
			}
			pods = append(pods, p)
			minMember := ""
			if gang != "" {
				minMember = strconv.Itoa(members)
			}
			podRows = append(podRows, []string{podName, strconv.FormatInt(c, 10), strconv.FormatInt(mm, 10),
				strconv.Itoa(per), strconv.Itoa(milli), gang, minMember})
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, w := range []func() error{
		func() error { return writeList(*out+"/nodes.json", "NodeList", nodes) },
		func() error { return writeList(*out+"/pods.json", "PodList", pods) },
		func() error { return writeCSV(*out+"/nodes.csv", nodeRows) },
		func() error { return writeCSV(*out+"/pods.csv", podRows) },
		func() error { return writeCSV(*out+"/node_rank.csv", rank) },
	} {
		if err := w(); err != nil {
			return err
		}
	}
	return nil
}

// A small deterministic generator (SplitMix64), the same on every platform.
type splitmix struct{ s uint64 }

func newRand(seed int64) *splitmix { return &splitmix{uint64(seed)} }
func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
func (r *splitmix) intn(n int) int { return int(r.next() % uint64(n)) }

func runSynth(args []string) error {
	fs := flag.NewFlagSet("synth", flag.ExitOnError)
	n := fs.Int("nodes", 5000, "nodes")
	nPods := fs.Int("pods", 1, "pending pods: 1 = one 1-GPU pod; more = shares of a GPU (300..700 milli)")
	out := fs.String("out", ".", "output folder")
	fs.Parse(args)
	var nodes []object
	for i := 0; i < *n; i++ {
		nodes = append(nodes, nodeObject(fmt.Sprintf("node-%05d", i), "NVIDIA-A100-SXM4-80GB", 8, 96000, 1<<19))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeList(*out+"/nodes.json", "NodeList", nodes); err != nil {
		return err
	}
	pods := []object{podObject("bench-pod", 4000, 16384, 1, 1000, "")}
	if *nPods > 1 {
		pods = nil
		for i := 0; i < *nPods; i++ {
			pods = append(pods, podObject(fmt.Sprintf("p%04d", i), 1000, 4096, 1, 300+100*(i%5), ""))
		}
	}
	return writeList(*out+"/pods.json", "PodList", pods)
}

// ---- fake API --------------------------------------------------------------

type event struct {
	rv   int64
	kind string // "nodes" or "pods"
	line []byte
}

type fakeAPI struct {
	mu     sync.Mutex
	cond   *sync.Cond
	rv     int64
	nodes  []object
	pods   map[string]object // ns/name
	events []event           // the newest; base is the number dropped before them
	base   int
	bound  map[string]time.Time // pods bound, and when (for -churn-after)
	gen    int
	// bindDelay: each Binding is answered this much later.
	bindDelay time.Duration
	podGroups []byte // a PodGroupList (scheduler-plugins); nil = that API is not installed (404)
}

// maxEvents kept for watchers; one that falls further behind gets 410 Gone
// and lists again, as from a real API server.
const maxEvents = 20000

func (a *fakeAPI) list(w http.ResponseWriter, kind string) {
	a.mu.Lock()
	var items []object
	if kind == "nodes" {
		items = a.nodes
	} else {
		keys := make([]string, 0, len(a.pods))
		for k := range a.pods {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, a.pods[k])
		}
	}
	body, err := json.Marshal(object{"apiVersion": "v1", "kind": map[string]string{"nodes": "NodeList", "pods": "PodList"}[kind],
		"metadata": object{"resourceVersion": strconv.FormatInt(a.rv, 10)}, "items": items})
	a.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (a *fakeAPI) watch(w http.ResponseWriter, r *http.Request, kind string) {
	from, _ := strconv.ParseInt(r.URL.Query().Get("resourceVersion"), 10, 64)
	timeout, _ := strconv.Atoi(r.URL.Query().Get("timeoutSeconds"))
	if timeout <= 0 {
		timeout = 300
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Second)
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	if flusher != nil {
		flusher.Flush()
	}
	// Wake the waiter at the deadline and when the client goes away.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-time.After(time.Until(deadline)):
		case <-r.Context().Done():
		case <-done:
		}
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	}()
	gone := []byte(`{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}}` + "\n")
	a.mu.Lock()
	next := a.base // absolute index of the next event to look at
	if a.base > 0 && len(a.events) > 0 && from < a.events[0].rv-1 {
		a.mu.Unlock()
		w.Write(gone)
		return
	}
	a.mu.Unlock()
	skip := func() {
		for next-a.base < len(a.events) && (a.events[next-a.base].kind != kind || a.events[next-a.base].rv <= from) {
			next++
		}
	}
	for {
		a.mu.Lock()
		if next < a.base {
			a.mu.Unlock()
			w.Write(gone)
			return
		}
		skip()
		for next-a.base >= len(a.events) && time.Now().Before(deadline) && r.Context().Err() == nil {
			a.cond.Wait()
			if next < a.base {
				break
			}
			skip()
		}
		if next < a.base {
			a.mu.Unlock()
			w.Write(gone)
			return
		}
		if next-a.base >= len(a.events) {
			a.mu.Unlock()
			return
		}
		line := a.events[next-a.base].line
		next++
		a.mu.Unlock()
		if _, err := w.Write(line); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// modifyPod applies f to a pod and records a MODIFIED event; under a.mu.
func (a *fakeAPI) modifyPod(key string, f func(object)) bool {
	p, ok := a.pods[key]
	if !ok {
		return false
	}
	f(p)
	a.emit("MODIFIED", p)
	return true
}

// emit records a pod event with the next resourceVersion; under a.mu.
func (a *fakeAPI) emit(eventType string, p object) {
	a.rv++
	meta(p)["resourceVersion"] = strconv.FormatInt(a.rv, 10)
	line, _ := json.Marshal(object{"type": eventType, "object": p})
	a.events = append(a.events, event{a.rv, "pods", append(line, '\n')})
	if len(a.events) > maxEvents {
		drop := len(a.events) / 2
		a.events = append([]event(nil), a.events[drop:]...)
		a.base += drop
	}
	a.cond.Broadcast()
}

// churn deletes each pod `after` its bind and adds a new pending pod in its
// place (same shape, a new name and UID): a steady stream of work.
func (a *fakeAPI) churn(after time.Duration) {
	for {
		time.Sleep(100 * time.Millisecond)
		a.mu.Lock()
		now := time.Now()
		for key, at := range a.bound {
			if now.Sub(at) < after {
				continue
			}
			old := a.pods[key]
			delete(a.pods, key)
			delete(a.bound, key)
			a.emit("DELETED", old)
			var fresh object
			b, _ := json.Marshal(old)
			json.Unmarshal(b, &fresh)
			a.gen++
			base := name(old)
			if i := strings.Index(base, "-g"); i >= 0 {
				base = base[:i]
			}
			n := fmt.Sprintf("%s-g%d", base, a.gen)
			meta(fresh)["name"] = n
			meta(fresh)["uid"] = "uid-" + n
			if ann, ok := meta(fresh)["annotations"].(object); ok {
				delete(ann, "gpupack.io/assigned-gpus")
			}
			delete(fresh["spec"].(object), "nodeName")
			fresh["status"] = object{"phase": "Pending"}
			a.pods[namespace(fresh)+"/"+n] = fresh
			a.emit("ADDED", fresh)
		}
		a.mu.Unlock()
	}
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case r.Method == "GET" && path == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups" && a.podGroups != nil:
		w.Header().Set("Content-Type", "application/json")
		w.Write(a.podGroups)
	case r.Method == "GET" && (path == "/api/v1/nodes" || path == "/api/v1/pods"):
		kind := strings.TrimPrefix(path, "/api/v1/")
		if w1 := r.URL.Query().Get("watch"); w1 == "1" || w1 == "true" {
			a.watch(w, r, kind)
		} else {
			a.list(w, kind)
		}
	case strings.HasPrefix(path, "/api/v1/namespaces/"):
		parts := strings.Split(strings.TrimPrefix(path, "/api/v1/namespaces/"), "/")
		if len(parts) < 3 || parts[1] != "pods" {
			http.NotFound(w, r)
			return
		}
		key := parts[0] + "/" + parts[2]
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var in object
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if r.Method == "POST" && a.bindDelay > 0 {
			time.Sleep(a.bindDelay)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		var ok bool
		switch {
		case r.Method == "POST" && len(parts) == 4 && parts[3] == "binding":
			target, _ := in["target"].(object)
			node, _ := target["name"].(string)
			if p := a.pods[key]; p != nil {
				if spec, _ := p["spec"].(object); spec["nodeName"] != nil {
					http.Error(w, `{"kind":"Status","status":"Failure","reason":"Conflict","code":409}`, 409)
					return
				}
			}
			ok = a.modifyPod(key, func(p object) {
				p["spec"].(object)["nodeName"] = node
				p["status"] = object{"phase": "Running"}
			})
			if ok {
				a.bound[key] = time.Now()
			}
		case r.Method == "PATCH" && len(parts) == 3:
			ok = a.modifyPod(key, func(p object) {
				m, _ := in["metadata"].(object)
				ann, _ := m["annotations"].(object)
				have, _ := meta(p)["annotations"].(object)
				if have == nil {
					have = object{}
					meta(p)["annotations"] = have
				}
				for k, v := range ann {
					have[k] = v
				}
			})
		default:
			http.Error(w, "not supported by the fake API", 405)
			return
		}
		if !ok {
			http.Error(w, `{"kind":"Status","status":"Failure","reason":"NotFound","code":404}`, 404)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success","code":201}`))
	default:
		http.NotFound(w, r)
	}
}

func runFakeAPI(args []string) error {
	fs := flag.NewFlagSet("fakeapi", flag.ExitOnError)
	nodesPath := fs.String("nodes", "nodes.json", "NodeList")
	podsPath := fs.String("pods", "pods.json", "PodList")
	portFile := fs.String("port-file", "", "write the listening port here")
	churnAfter := fs.Duration("churn-after", 0, "delete each pod this long after its bind and add a new pending one")
	kubeconfig := fs.String("kubeconfig", "", "write a kubeconfig for this API here (after the port file)")
	bindDelay := fs.Duration("bind-delay", 0, "answer each Binding this much later (a slow API server)")
	podGroups := fs.String("podgroups", "", "serve this PodGroup list at /apis/scheduling.x-k8s.io/v1alpha1/podgroups")
	fs.Parse(args)
	nodes, pods, _, err := readCluster(*nodesPath, *podsPath)
	if err != nil {
		return err
	}
	a := &fakeAPI{rv: 1, nodes: nodes, pods: map[string]object{}, bound: map[string]time.Time{}, bindDelay: *bindDelay}
	a.cond = sync.NewCond(&a.mu)
	for _, p := range pods {
		a.pods[namespace(p)+"/"+name(p)] = p
	}
	if *podGroups != "" {
		if a.podGroups, err = os.ReadFile(*podGroups); err != nil {
			return err
		}
	}
	if *churnAfter > 0 {
		go a.churn(*churnAfter)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if *portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(*portFile+".tmp", []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*portFile+".tmp", *portFile); err != nil {
			return err
		}
	}
	if *kubeconfig != "" {
		cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://%s"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: fake, context: {cluster: fake, user: u}}]
current-context: fake
`, ln.Addr().String())
		if err := os.WriteFile(*kubeconfig+".tmp", []byte(cfg), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*kubeconfig+".tmp", *kubeconfig); err != nil {
			return err
		}
	}
	return http.Serve(ln, a)
}

// ---- the extender client ---------------------------------------------------

// The wire types of k8s.io/kube-scheduler/extender/v1, as encoding/json
// writes them from kube-scheduler (pointer fields without omitempty).
type extenderArgs struct {
	Pod       object    `json:"Pod"`
	Nodes     *nodeList `json:"Nodes"`
	NodeNames *[]string `json:"NodeNames"`
}

type nodeList struct {
	Items []object `json:"items"`
}

type filterResult struct {
	Nodes                      *nodeList         `json:"Nodes"`
	NodeNames                  *[]string         `json:"NodeNames"`
	FailedNodes                map[string]string `json:"FailedNodes"`
	FailedAndUnresolvableNodes map[string]string `json:"FailedAndUnresolvableNodes"`
	Error                      string            `json:"Error"`
}

type hostPriority struct {
	Host  string `json:"Host"`
	Score int64  `json:"Score"`
}

type bindingArgs struct {
	PodName      string `json:"PodName"`
	PodNamespace string `json:"PodNamespace"`
	PodUID       string `json:"PodUID"`
	Node         string `json:"Node"`
}

type bindingResult struct {
	Error string `json:"Error"`
}

type client struct {
	http      *http.Client
	url       string
	filterMs  []float64
	priorMs   []float64
	bindMs    []float64
	uniqueTop int
	prioCalls int
	quietGC   bool // runtime.GC() before each timed call (bench -quiet-gc)
	// Where a filter call's time goes, as this process sees it: writing the
	// request, waiting for the reply's first byte (the server's work), and
	// reading the reply to its last byte.
	filterWriteMs, filterWaitMs, filterReadMs []float64
}

func newClient(url string) *client {
	// kube-scheduler's extender client: a Transport with keep-alive and
	// its default of two idle connections per host, and a timeout.
	return &client{url: strings.TrimRight(url, "/"), http: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true},
		Timeout:   30 * time.Second,
	}}
}

// send is kube-scheduler's HTTPExtender.send: POST the JSON, any status but
// 200 is an error, the reply decoded as JSON. Returns the milliseconds from
// sending the request to the last reply byte, as this process saw them.
func (c *client) send(verb string, args, result interface{}) (float64, error) {
	out, err := json.Marshal(args)
	if err != nil {
		return 0, err
	}
	if c.quietGC {
		runtime.GC()
	}
	var wrote, first time.Time
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST",
		c.url+"/"+verb, bytes.NewReader(out))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("failed %v with extender at URL %v, code %v", verb, c.url, resp.StatusCode)
	}
	// The whole reply is read before it is decoded (and before the next
	// request): the time is the round trip to the last reply byte, without
	// this client's own JSON decoding.
	body, err := io.ReadAll(resp.Body)
	end := time.Now()
	ms := float64(end.Sub(start).Microseconds()) / 1000
	if err != nil {
		return 0, err
	}
	if verb == "filter" && !wrote.IsZero() && !first.IsZero() {
		c.filterWriteMs = append(c.filterWriteMs, float64(wrote.Sub(start).Microseconds())/1000)
		c.filterWaitMs = append(c.filterWaitMs, float64(first.Sub(wrote).Microseconds())/1000)
		c.filterReadMs = append(c.filterReadMs, float64(end.Sub(first).Microseconds())/1000)
	}
	return ms, json.NewDecoder(bytes.NewReader(body)).Decode(result)
}

func argsFor(pod object, nodes []object, names []string, full bool) extenderArgs {
	a := extenderArgs{Pod: pod}
	if full {
		a.Nodes = &nodeList{Items: nodes}
	} else {
		n := append([]string(nil), names...)
		a.NodeNames = &n
	}
	return a
}

// filterThenPrioritize returns the chosen node ("" when none passes) and
// any pod-level error the extender gave.
func (c *client) filterThenPrioritize(pod object, nodes []object, byName map[string]object, full bool) (string, error) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = name(n)
	}
	var f filterResult
	ms, err := c.send("filter", argsFor(pod, nodes, names, full), &f)
	if err != nil {
		return "", err
	}
	c.filterMs = append(c.filterMs, ms)
	if f.Error != "" {
		return "", fmt.Errorf("filter: %s", f.Error)
	}
	var passed []string
	if full {
		if f.Nodes != nil {
			for _, n := range f.Nodes.Items {
				passed = append(passed, name(n))
			}
		}
	} else if f.NodeNames != nil {
		passed = *f.NodeNames
	}
	if len(passed) == 0 {
		return "", nil
	}
	var passedNodes []object
	for _, n := range passed {
		obj, ok := byName[n]
		if !ok {
			return "", fmt.Errorf("filter passed node %q the scheduler never sent", n)
		}
		passedNodes = append(passedNodes, obj)
	}
	var scores []hostPriority
	ms, err = c.send("prioritize", argsFor(pod, passedNodes, passed, full), &scores)
	if err != nil {
		return "", err
	}
	c.priorMs = append(c.priorMs, ms)
	c.prioCalls++
	best, chosen, tops := int64(-1), "", 0
	for _, h := range scores {
		switch {
		case h.Score > best:
			best, chosen, tops = h.Score, h.Host, 1
		case h.Score == best:
			tops++
			if h.Host < chosen {
				chosen = h.Host
			}
		}
	}
	if tops == 1 {
		c.uniqueTop++
	}
	if len(scores) == 0 {
		chosen = passed[0]
	}
	return chosen, nil
}

func quantile(ms []float64, q float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}

func (c *client) stats() object {
	return object{
		"filter_p50_ms": quantile(c.filterMs, 0.5), "filter_p99_ms": quantile(c.filterMs, 0.99),
		"prioritize_p50_ms": quantile(c.priorMs, 0.5), "prioritize_p99_ms": quantile(c.priorMs, 0.99),
		"bind_p50_ms": quantile(c.bindMs, 0.5), "filter_calls": len(c.filterMs),
		"prioritize_calls": c.prioCalls, "unique_top": c.uniqueTop,
		"filter_write_p50_ms": quantile(c.filterWriteMs, 0.5), "filter_wait_p50_ms": quantile(c.filterWaitMs, 0.5),
		"filter_read_p50_ms": quantile(c.filterReadMs, 0.5), "filter_wait_p99_ms": quantile(c.filterWaitMs, 0.99),
		"filter_write_p99_ms": quantile(c.filterWriteMs, 0.99), "filter_read_p99_ms": quantile(c.filterReadMs, 0.99),
		"filter_p90_ms": quantile(c.filterMs, 0.9),
	}
}

// boundPods reads gpupack_bound_pods from the extender's /metrics.
func boundPods(url string) (int, error) {
	v, err := metricValue(url, "gpupack_bound_pods")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// metricValue returns the value of the series written exactly as `series`
// (name and labels) in the extender's /metrics; an error when absent.
func metricValue(url, series string) (string, error) {
	resp, err := http.Get(strings.TrimRight(url, "/") + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" "), nil
		}
	}
	return "", fmt.Errorf("no series %s in /metrics", series)
}

// metricMiB is a byte-valued series in MiB (one decimal), -1 when absent.
func metricMiB(url, series string) float64 {
	v, err := metricValue(url, series)
	if err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return -1
	}
	return math.Round(f/(1<<20)*10) / 10
}

// runMetric prints the value of the series written exactly as -series
// (name and labels) in the extender's /metrics; an error when absent.
func runMetric(args []string) error {
	fs := flag.NewFlagSet("metric", flag.ExitOnError)
	url := fs.String("extender", "", "the extender's URL prefix")
	series := fs.String("series", "", `e.g. gpupack_gangs_total{outcome="placed"}`)
	fs.Parse(args)
	v, err := metricValue(*url, *series)
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}

func post(url string, body interface{}) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: HTTP %d: %s", url, resp.StatusCode, msg)
	}
	return nil
}

// postBinding binds pod to node through the API, as kube-scheduler does.
func postBinding(api string, pod object, node string) error {
	return post(fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/binding", strings.TrimRight(api, "/"),
		namespace(pod), name(pod)), object{"apiVersion": "v1", "kind": "Binding",
		"metadata": object{"name": name(pod), "namespace": namespace(pod), "uid": uid(pod)},
		"target":   object{"apiVersion": "v1", "kind": "Node", "name": node}})
}

func runSchedule(args []string) error {
	fs := flag.NewFlagSet("schedule", flag.ExitOnError)
	url := fs.String("extender", "", "the extender's URL prefix, e.g. http://127.0.0.1:8888")
	nodesPath := fs.String("nodes", "nodes.json", "NodeList the scheduler sees")
	podsPath := fs.String("pods", "pods.json", "PodList, scheduled in this order")
	full := fs.Bool("full-nodes", false, "send full Node objects (nodeCacheCapable: false) instead of NodeNames")
	bind := fs.String("bind", "extender", "who binds: extender (its bind verb), api (POST a Binding to -api), none")
	api := fs.String("api", "", "with -bind api: the API server's URL")
	wait := fs.Bool("wait-learned", false, "after each bind, wait until the extender's gpupack_bound_pods counts it")
	outPath := fs.String("out", "placements.csv", "pod,node per pod")
	ackedPath := fs.String("acked", "", "append pod,node here as each bind is acknowledged (kept when the extender dies)")
	pendingFromAPI := fs.Bool("pending-from-api", false, "schedule the pods -api lists without a node, not -pods")
	statsPath := fs.String("stats", "", "write client-side latency figures here (JSON)")
	drop := fs.String("drop", "", "never bind this pod (a scheduler that lost it); its row gets no node")
	asyncGangs := fs.Bool("async-gangs", false, "with -bind extender: bind gang members in the background, as "+
		"kube-scheduler's binding cycle does (a gang's binds wait for each other); the row of a failed bind "+
		"gets no node")
	fs.Parse(args)
	nodes, pods, byName, err := readCluster(*nodesPath, *podsPath)
	if err != nil {
		return err
	}
	if *pendingFromAPI {
		if pods, err = pendingPods(*api); err != nil {
			return err
		}
	}
	c := newClient(*url)
	rows := [][]string{{"pod", "node"}}
	var acked *os.File
	if *ackedPath != "" {
		if acked, err = os.OpenFile(*ackedPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return err
		}
		defer acked.Close()
	}
	bound := 0
	if *wait {
		if bound, err = boundPods(c.url); err != nil {
			return err
		}
	}
	var async sync.WaitGroup
	var asyncMu sync.Mutex
	var asyncErrs []string
	for _, pod := range pods {
		chosen, err := c.filterThenPrioritize(pod, nodes, byName, *full)
		if err != nil {
			return fmt.Errorf("pod %s: %v", name(pod), err)
		}
		if name(pod) == *drop {
			chosen = ""
		}
		rows = append(rows, []string{name(pod), chosen})
		if chosen == "" {
			continue
		}
		ann, _ := meta(pod)["annotations"].(object)
		labels, _ := meta(pod)["labels"].(object)
		_, gang := ann["gpupack.io/gang-name"]
		if _, group := labels["scheduling.x-k8s.io/pod-group"]; group {
			gang = true
		}
		if gang && *asyncGangs && *bind == "extender" {
			row := len(rows) - 1
			args := bindingArgs{name(pod), namespace(pod), uid(pod), chosen}
			async.Add(1)
			go func() {
				defer async.Done()
				var r bindingResult
				_, err := c.send("bind", args, &r)
				if err == nil && r.Error != "" {
					err = errors.New(r.Error)
				}
				asyncMu.Lock()
				defer asyncMu.Unlock()
				if err != nil {
					rows[row][1] = ""
					asyncErrs = append(asyncErrs, fmt.Sprintf("pod %s: bind: %v", args.PodName, err))
				} else if acked != nil {
					fmt.Fprintf(acked, "%s,%s\n", args.PodName, args.Node)
				}
			}()
			continue
		}
		switch *bind {
		case "extender":
			var r bindingResult
			ms, err := c.send("bind", bindingArgs{name(pod), namespace(pod), uid(pod), chosen}, &r)
			if err == nil && r.Error != "" {
				err = errors.New(r.Error)
			}
			if err != nil {
				return fmt.Errorf("pod %s: bind: %v", name(pod), err)
			}
			c.bindMs = append(c.bindMs, ms)
			if acked != nil {
				fmt.Fprintf(acked, "%s,%s\n", name(pod), chosen)
			}
		case "api":
			if err := postBinding(*api, pod, chosen); err != nil {
				return fmt.Errorf("pod %s: %v", name(pod), err)
			}
		case "none":
		default:
			return fmt.Errorf("-bind %q: expected extender, api or none", *bind)
		}
		if *wait && *bind != "none" {
			bound++
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, err := boundPods(c.url)
				if err != nil {
					return err
				}
				if n >= bound {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("pod %s: the extender counts %d bound pods, not %d, 10 s after the bind",
						name(pod), n, bound)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	async.Wait()
	for _, e := range asyncErrs {
		fmt.Fprintln(os.Stderr, "scheduler:", e)
	}
	if err := writeCSV(*outPath, rows); err != nil {
		return err
	}
	if *statsPath != "" {
		return writeJSON(*statsPath, c.stats())
	}
	return nil
}

// listPods lists the API's pods.
func listPods(api string) ([]object, error) {
	resp, err := http.Get(strings.TrimRight(api, "/") + "/api/v1/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Items []object `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	return list.Items, err
}

// pendingPods lists the API's pods that have no node yet, in list order.
func pendingPods(api string) ([]object, error) {
	items, err := listPods(api)
	if err != nil {
		return nil, err
	}
	var out []object
	for _, p := range items {
		if spec, _ := p["spec"].(object); spec["nodeName"] == nil || spec["nodeName"] == "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// runVerify checks the API's pods against the binds a scheduler saw
// acknowledged: each is bound there, to that node, and no GPU holds more
// than all of it (gpupack.io/assigned-gpus, "node:0,1[@milli]").
func runVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	api := fs.String("api", "", "the fake API's URL")
	ackedPath := fs.String("acked", "acked.csv", "pod,node lines")
	gangs := fs.Bool("gangs", false, "also: every gang is bound whole (at least its gpupack.io/gang-min-member) or not at all")
	fs.Parse(args)
	items, err := listPods(*api)
	if err != nil {
		return err
	}
	if *gangs {
		bound, minimum := map[string]int{}, map[string]int{}
		for _, p := range items {
			ann, _ := meta(p)["annotations"].(object)
			g, _ := ann["gpupack.io/gang-name"].(string)
			if g == "" {
				continue
			}
			m, _ := ann["gpupack.io/gang-min-member"].(string)
			minimum[g], _ = strconv.Atoi(m)
			if spec, _ := p["spec"].(object); spec["nodeName"] != nil && spec["nodeName"] != "" {
				bound[g]++
			}
		}
		whole := 0
		for g, m := range minimum {
			if bound[g] != 0 && bound[g] < m {
				return fmt.Errorf("gang %s: %d members bound, below its minimum %d", g, bound[g], m)
			}
			if bound[g] > 0 {
				whole++
			}
		}
		fmt.Printf("verified: %d gangs, %d bound whole, none partly\n", len(minimum), whole)
	}
	boundTo := map[string]string{}
	milli := map[string]int{} // node/gpu -> milli
	for _, p := range items {
		spec, _ := p["spec"].(object)
		node, _ := spec["nodeName"].(string)
		if node == "" {
			continue
		}
		boundTo[name(p)] = node
		ann, _ := meta(p)["annotations"].(object)
		a, _ := ann["gpupack.io/assigned-gpus"].(string)
		if a == "" {
			return fmt.Errorf("pod %s is bound to %s without gpupack.io/assigned-gpus", name(p), node)
		}
		head, share := a, 1000
		if at := strings.IndexByte(a, '@'); at >= 0 {
			head = a[:at]
			if share, err = strconv.Atoi(a[at+1:]); err != nil {
				return fmt.Errorf("pod %s: annotation %q", name(p), a)
			}
		}
		colon := strings.IndexByte(head, ':')
		if colon < 0 || head[:colon] != node {
			return fmt.Errorf("pod %s: annotation %q does not name its node %s", name(p), a, node)
		}
		for _, g := range strings.Split(head[colon+1:], ",") {
			milli[node+"/"+g] += share
		}
	}
	for gpu, m := range milli {
		if m > 1000 {
			return fmt.Errorf("GPU %s holds %d milli: double-booked", gpu, m)
		}
	}
	rows, err := readCSV(*ackedPath)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		if boundTo[r[0]] != r[1] {
			return fmt.Errorf("acknowledged bind of %s to %s lost (the API has %q)", r[0], r[1], boundTo[r[0]])
		}
	}
	fmt.Printf("verified: %d acknowledged binds present, %d pods bound, %d GPUs used, none over 1000 milli\n",
		len(rows), len(boundTo), len(milli))
	return nil
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	url := fs.String("extender", "", "the extender's URL prefix")
	nodesPath := fs.String("nodes", "nodes.json", "NodeList")
	podsPath := fs.String("pods", "pods.json", "PodList; its first pod is scored")
	full := fs.Bool("full-nodes", false, "send full Node objects instead of NodeNames")
	calls := fs.Int("calls", 200, "filter + prioritize pairs measured")
	warmup := fs.Int("warmup", 5, "pairs sent first, not measured")
	statsPath := fs.String("stats", "", "write the figures here (JSON); printed either way")
	subset := fs.Int("subset", 0, "send this many nodes a call, a window that moves on by its size each call as kube-scheduler's percentageOfNodesToScore does (0 = every node)")
	api := fs.String("api", "", "with -bind-every: the fake API where pods are bound (each Binding is a watch event that reloads the extender's model)")
	bindEvery := fs.Int("bind-every", 0, "every this many pairs, bind the next pod of -pods to the chosen node through -api")
	bindFrom := fs.Int("bind-from", 1, "with -bind-every: the index in -pods of the first pod to bind (the first pod, 0, is the one scored)")
	quietGC := fs.Bool("quiet-gc", false, "collect this client's garbage between calls (untimed), so that its collector does not run inside a timed call")
	fs.Parse(args)
	nodes, pods, byName, err := readCluster(*nodesPath, *podsPath)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("%s: no pod", *podsPath)
	}
	c := newClient(*url)
	c.quietGC = *quietGC
	next := 0 // kube-scheduler's nextStartNodeIndex
	window := func() []object {
		if *subset <= 0 || *subset >= len(nodes) {
			return nodes
		}
		w := make([]object, 0, *subset)
		for k := 0; k < *subset; k++ {
			w = append(w, nodes[(next+k)%len(nodes)])
		}
		next = (next + *subset) % len(nodes)
		return w
	}
	for i := 0; i < *warmup; i++ {
		if _, err := c.filterThenPrioritize(pods[0], window(), byName, *full); err != nil {
			return err
		}
	}
	c.filterMs, c.priorMs, c.uniqueTop, c.prioCalls = nil, nil, 0, 0
	c.filterWriteMs, c.filterWaitMs, c.filterReadMs = nil, nil, nil
	spare, bindings := *bindFrom, 0
	var pairMs []float64 // filter + prioritize of one pod, both timed calls
	for i := 0; i < *calls; i++ {
		nf, np := len(c.filterMs), len(c.priorMs)
		chosen, err := c.filterThenPrioritize(pods[0], window(), byName, *full)
		if err != nil {
			return err
		}
		if len(c.filterMs) == nf+1 && len(c.priorMs) == np+1 {
			pairMs = append(pairMs, c.filterMs[nf]+c.priorMs[np])
		}
		if *api != "" && *bindEvery > 0 && i%*bindEvery == 0 && spare < len(pods) && chosen != "" {
			pod := pods[spare]
			spare++
			if err := postBinding(*api, pod, chosen); err != nil {
				return err
			}
			bindings++
		}
	}
	s := c.stats()
	s["api_bindings"] = bindings
	s["filter_max_ms"], s["prioritize_max_ms"] = quantile(c.filterMs, 1), quantile(c.priorMs, 1)
	s["pair_p50_ms"], s["pair_p99_ms"], s["pair_max_ms"] = quantile(pairMs, 0.5), quantile(pairMs, 0.99), quantile(pairMs, 1)
	// The floor of this machine: the same client and connection, a GET of
	// /healthz (no body, no decision), after the pairs.
	var health []float64
	for i := 0; i < *calls; i++ {
		start := time.Now()
		resp, err := c.http.Get(c.url + "/healthz")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		health = append(health, float64(time.Since(start).Microseconds())/1000)
	}
	s["healthz_p50_ms"], s["healthz_p99_ms"] = quantile(health, 0.5), quantile(health, 0.99)
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
	if *statsPath != "" {
		return writeJSON(*statsPath, s)
	}
	return nil
}

// ---- floor -----------------------------------------------------------------

// runFloor serves filter and prioritize without deciding anything: the first
// call of each verb is decoded to build an answer in which every candidate
// passes (full Nodes echoed, as nodeCacheCapable: false requires) and scores
// 10; every later call is read to its end and gets those same bytes. The
// bench against it measures the client, loopback and an HTTP server, no
// extender.
func runFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	portFile := fs.String("port-file", "", "write the bound port here")
	fs.Parse(args)
	var mu sync.Mutex
	replies := map[string][]byte{}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	verb := func(verb string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			reply, ok := replies[verb]
			mu.Unlock()
			if ok {
				io.Copy(io.Discard, r.Body)
			} else {
				var a extenderArgs
				if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				names := []string{}
				if a.NodeNames != nil {
					names = *a.NodeNames
				} else if a.Nodes != nil {
					for _, n := range a.Nodes.Items {
						names = append(names, name(n))
					}
				}
				var err error
				if verb == "filter" {
					res := filterResult{FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}}
					if a.Nodes != nil {
						res.Nodes = a.Nodes
					} else {
						res.NodeNames = &names
					}
					reply, err = json.Marshal(res)
				} else {
					scores := []hostPriority{}
					for _, n := range names {
						scores = append(scores, hostPriority{Host: n, Score: 10})
					}
					reply, err = json.Marshal(scores)
				}
				if err != nil {
					return
				}
				mu.Lock()
				replies[verb] = reply
				mu.Unlock()
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(reply)
		}
	}
	mux.HandleFunc("/filter", verb("filter"))
	mux.HandleFunc("/prioritize", verb("prioritize"))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if *portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(*portFile, []byte(strconv.Itoa(port)), 0o644); err != nil {
			return err
		}
	}
	return http.Serve(ln, mux)
}

// ---- soak ------------------------------------------------------------------

type soakStats struct {
	mu        sync.Mutex
	ms        map[string][]float64 // verb -> latencies this interval
	errors    int
	noNodes   int
	lastError string
}

func (st *soakStats) fail(what string, err error, reply string) {
	st.mu.Lock()
	st.errors++
	if err != nil {
		st.lastError = what + ": " + err.Error()
	} else {
		st.lastError = what + ": " + reply
	}
	st.mu.Unlock()
}

func (st *soakStats) add(verb string, ms float64) {
	st.mu.Lock()
	st.ms[verb] = append(st.ms[verb], ms)
	st.mu.Unlock()
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return -1
}

// runSoak: `clients` schedulers take pending pods from the API (the fake
// API's churn keeps them coming) and filter, prioritize and bind each
// through the extender; one in 20 calls is a /metrics scrape. Every
// `report` it prints a JSON line: requests, p50/p99 per verb over the
// interval, errors, the server's RSS and its heap in use and held free.
func runSoak(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	url := fs.String("extender", "", "the extender's URL prefix")
	api := fs.String("api", "", "the fake API's URL (pending pods)")
	nodesPath := fs.String("nodes", "nodes.json", "NodeList")
	clients := fs.Int("clients", 16, "concurrent schedulers")
	duration := fs.Duration("duration", 10*time.Minute, "how long")
	report := fs.Duration("report", time.Minute, "interval between report lines")
	pid := fs.Int("pid", 0, "the server's process id (for its RSS)")
	fs.Parse(args)
	nodes, err := readList(*nodesPath)
	if err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = name(n)
	}
	st := &soakStats{ms: map[string][]float64{}}
	var qmu sync.Mutex
	queue := []object{}
	taken := map[string]bool{}
	deadline := time.Now().Add(*duration)
	go func() { // the scheduling queue: pending pods, refreshed
		for time.Now().Before(deadline) {
			if pods, err := pendingPods(*api); err == nil {
				qmu.Lock()
				queue = queue[:0]
				for _, p := range pods {
					if !taken[uid(p)] {
						queue = append(queue, p)
					}
				}
				qmu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cl := newClient(*url)
			for i := 0; time.Now().Before(deadline); i++ {
				if i%20 == 19 {
					start := time.Now()
					if resp, err := cl.http.Get(cl.url + "/metrics"); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						st.add("metrics", float64(time.Since(start).Microseconds())/1000)
					}
					continue
				}
				qmu.Lock()
				var pod object
				if len(queue) > 0 {
					pod, queue = queue[len(queue)-1], queue[:len(queue)-1]
					taken[uid(pod)] = true
				}
				qmu.Unlock()
				if pod == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				// A pod not bound this time goes back to the queue (a
				// scheduler retries it), after the next refresh.
				retry := func() {
					qmu.Lock()
					delete(taken, uid(pod))
					qmu.Unlock()
				}
				var f filterResult
				ms, err := cl.send("filter", argsFor(pod, nil, names, false), &f)
				if err != nil || f.Error != "" {
					st.fail("filter", err, f.Error)
					retry()
					continue
				}
				st.add("filter", ms)
				if f.NodeNames == nil || len(*f.NodeNames) == 0 {
					st.mu.Lock()
					st.noNodes++
					st.mu.Unlock()
					retry()
					continue
				}
				var scores []hostPriority
				ms, err = cl.send("prioritize", argsFor(pod, nil, *f.NodeNames, false), &scores)
				if err != nil {
					retry()
					continue
				}
				st.add("prioritize", ms)
				best, chosen := int64(-1), ""
				for _, h := range scores {
					if h.Score > best || (h.Score == best && h.Host < chosen) {
						best, chosen = h.Score, h.Host
					}
				}
				var r bindingResult
				ms, err = cl.send("bind", bindingArgs{name(pod), namespace(pod), uid(pod), chosen}, &r)
				if err != nil || r.Error != "" {
					st.fail("bind", err, r.Error)
					retry()
					continue
				}
				st.add("bind", ms)
			}
		}(c)
	}
	start := time.Now()
	tick := time.NewTicker(*report)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	emit := func() {
		st.mu.Lock()
		line := object{"t_s": int(time.Since(start).Seconds()), "rss_kib": rssKiB(*pid), "errors": st.errors,
			"heap_in_use_mib": metricMiB(*url, "gpupack_process_heap_in_use_bytes"),
			"heap_free_mib":   metricMiB(*url, "gpupack_process_heap_free_bytes"),
			"no_node":         st.noNodes, "last_error": st.lastError}
		for verb, ms := range st.ms {
			line[verb] = object{"n": len(ms), "p50_ms": quantile(ms, 0.5), "p99_ms": quantile(ms, 0.99)}
		}
		st.ms = map[string][]float64{}
		st.errors, st.noNodes, st.lastError = 0, 0, ""
		st.mu.Unlock()
		b, _ := json.Marshal(line)
		fmt.Println(string(b))
	}
	for {
		select {
		case <-tick.C:
			emit()
		case <-done:
			emit()
			return nil
		}
	}
}
