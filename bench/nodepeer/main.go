// nodepeer plays the kubelet for bench/node.sh on a machine without one: it
// serves the Registration socket (calling GetDevicePluginOptions back inside
// Register, as the kubelet's device manager does), reads each registered
// resource's device list from ListAndWatch, asks Allocate for the containers
// named on the command line as the kubelet would for their resource requests,
// writes every Allocate answer to a JSON file, then serves PodResources List
// with those containers until it is stopped.
//
// Built with Debian's grpc-go in GOPATH mode by bench/nodepeer/build.sh into
// one static binary, so it runs on a GPU machine that has no Go.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	dp "gpuslice/tests/deviceplugin"
	pr "gpuslice/tests/podresources"
)

type codecV2 struct{}

func (codecV2) Marshal(v interface{}) ([]byte, error)   { return proto.Marshal(v.(proto.Message)) }
func (codecV2) Unmarshal(b []byte, v interface{}) error { return proto.Unmarshal(b, v.(proto.Message)) }
func (codecV2) Name() string                            { return "proto" }

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "nodepeer: "+format+"\n", a...)
	os.Exit(1)
}

func dial(path string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

type plugin struct {
	name string
	conn *grpc.ClientConn
}

// One container of the command line: name:res=N,res=N
type container struct {
	Name    string              `json:"name"`
	Ask     map[string]int      `json:"ask"`
	IDs     map[string][]string `json:"ids"`
	Envs    map[string]string   `json:"envs"`
	Mounts  []mount             `json:"mounts"`
	Devices []string            `json:"devices"`
	CDI     []string            `json:"cdi_devices"`
}

type mount struct {
	Container string `json:"container_path"`
	Host      string `json:"host_path"`
	ReadOnly  bool   `json:"read_only"`
}

func parseContainers(s string) []*container {
	var out []*container
	for _, part := range strings.Split(s, ";") {
		if part == "" {
			continue
		}
		nameAsk := strings.SplitN(part, ":", 2)
		if len(nameAsk) != 2 {
			fail("container %q: want name:resource=N,...", part)
		}
		c := &container{Name: nameAsk[0], Ask: map[string]int{}, IDs: map[string][]string{},
			Envs: map[string]string{}}
		for _, kv := range strings.Split(nameAsk[1], ",") {
			p := strings.SplitN(kv, "=", 2)
			n, err := strconv.Atoi(p[len(p)-1])
			if len(p) != 2 || err != nil || n <= 0 {
				fail("container %s: %q is not resource=N", c.Name, kv)
			}
			c.Ask[p[0]] = n
		}
		out = append(out, c)
	}
	return out
}

func main() {
	dir := flag.String("dir", "", "the device-plugins folder (kubelet.sock is made there)")
	podres := flag.String("podres", "", "where to serve PodResources (a socket path)")
	want := flag.Int("want", 1, "registrations to wait for")
	spec := flag.String("containers", "", "name:resource=N,...;name:... (the containers to allocate)")
	out := flag.String("out", "", "where to write the Allocate answers (JSON)")
	flag.Parse()
	if *dir == "" || *spec == "" || *out == "" {
		fail("usage: nodepeer -dir DIR -containers SPEC -out FILE [-podres SOCK] [-want N]")
	}
	encoding.RegisterCodec(codecV2{})
	containers := parseContainers(*spec)

	regs := make(chan plugin, 16)
	register := func(srv interface{}, ctx context.Context, dec func(interface{}) error,
		_ grpc.UnaryServerInterceptor) (interface{}, error) {
		req := new(dp.RegisterRequest)
		if err := dec(req); err != nil {
			return nil, err
		}
		conn, err := dial(*dir + "/" + req.Endpoint)
		if err != nil {
			return nil, err
		}
		opts := new(dp.DevicePluginOptions)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = conn.Invoke(cctx, "/v1beta1.DevicePlugin/GetDevicePluginOptions", &dp.Empty{}, opts)
		cancel()
		if err != nil {
			return nil, err
		}
		regs <- plugin{req.ResourceName, conn}
		return &dp.Empty{}, nil
	}
	lis, err := net.Listen("unix", *dir+"/kubelet.sock")
	if err != nil {
		fail("listen: %v", err)
	}
	s := grpc.NewServer()
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "v1beta1.Registration", HandlerType: (*interface{})(nil),
		Methods:  []grpc.MethodDesc{{MethodName: "Register", Handler: register}},
		Metadata: "deviceplugin_v1beta1.proto",
	}, struct{}{})
	go s.Serve(lis)
	defer s.Stop()
	fmt.Println("nodepeer: listening on", *dir+"/kubelet.sock")

	plugins := map[string]*grpc.ClientConn{}
	deadline := time.After(60 * time.Second)
	for len(plugins) < *want {
		select {
		case p := <-regs:
			plugins[p.name] = p.conn
			fmt.Println("nodepeer: registered", p.name)
		case <-deadline:
			fail("%d of %d resources registered in 60 s", len(plugins), *want)
		}
	}
	// Each resource's healthy device IDs, from the first ListAndWatch answer.
	free := map[string][]string{}
	for name, conn := range plugins {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/v1beta1.DevicePlugin/ListAndWatch")
		var list dp.ListAndWatchResponse
		if err == nil {
			err = st.SendMsg(&dp.Empty{})
		}
		if err == nil {
			err = st.CloseSend()
		}
		if err == nil {
			err = st.RecvMsg(&list)
		}
		cancel()
		if err != nil {
			fail("ListAndWatch %s: %v", name, err)
		}
		for _, d := range list.Devices {
			if d.Health == "Healthy" {
				free[name] = append(free[name], d.ID)
			}
		}
		sort.Strings(free[name])
		fmt.Printf("nodepeer: %s lists %d healthy devices\n", name, len(free[name]))
	}
	// Allocate, resource by resource, as the kubelet does for each container.
	var took []time.Duration // each Allocate's round trip, for the footprint benchmark
	for _, c := range containers {
		names := make([]string, 0, len(c.Ask))
		for r := range c.Ask {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			conn, n := plugins[r], c.Ask[r]
			if conn == nil || len(free[r]) < n {
				fail("container %s: %d of %s, %d free", c.Name, n, r, len(free[r]))
			}
			ids := free[r][:n]
			free[r] = free[r][n:]
			var resp dp.AllocateResponse
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			t0 := time.Now()
			err := conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &dp.AllocateRequest{
				ContainerRequests: []*dp.ContainerAllocateRequest{{DevicesIds: ids}}}, &resp)
			took = append(took, time.Since(t0))
			cancel()
			if err != nil {
				fail("Allocate %s for %s: %v", r, c.Name, err)
			}
			c.IDs[r] = ids
			cr := resp.ContainerResponses[0]
			for k, v := range cr.Envs {
				c.Envs[k] = v
			}
			c.Mounts, c.Devices, c.CDI = nil, nil, nil
			for _, m := range cr.Mounts {
				c.Mounts = append(c.Mounts, mount{m.ContainerPath, m.HostPath, m.ReadOnly})
			}
			for _, d := range cr.Devices {
				c.Devices = append(c.Devices, d.HostPath)
			}
			for _, d := range cr.CdiDevices {
				c.CDI = append(c.CDI, d.Name)
			}
		}
	}
	b, _ := json.MarshalIndent(containers, "", " ")
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Println("nodepeer: allocated; answers in", *out)
	if len(took) > 0 {
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		fmt.Printf("nodepeer: Allocate p50 %.3f ms p95 %.3f ms max %.3f ms (n=%d, grpc-go, one connection per resource)\n",
			ms(took[len(took)/2]), ms(took[(len(took)*95)/100]), ms(took[len(took)-1]), len(took))
	}

	if *podres != "" {
		resp := &pr.ListPodResourcesResponse{}
		for _, c := range containers {
			cr := &pr.ContainerResources{Name: "main"}
			for r, ids := range c.IDs {
				cr.Devices = append(cr.Devices, &pr.ContainerDevices{ResourceName: r, DeviceIds: ids})
			}
			resp.PodResources = append(resp.PodResources,
				&pr.PodResources{Name: c.Name, Namespace: "bench", Containers: []*pr.ContainerResources{cr}})
		}
		list := func(srv interface{}, ctx context.Context, dec func(interface{}) error,
			_ grpc.UnaryServerInterceptor) (interface{}, error) {
			if err := dec(new(pr.ListPodResourcesRequest)); err != nil {
				return nil, err
			}
			return resp, nil
		}
		os.Remove(*podres)
		pl, err := net.Listen("unix", *podres)
		if err != nil {
			fail("listen %s: %v", *podres, err)
		}
		ps := grpc.NewServer()
		ps.RegisterService(&grpc.ServiceDesc{
			ServiceName: "v1.PodResourcesLister", HandlerType: (*interface{})(nil),
			Methods:  []grpc.MethodDesc{{MethodName: "List", Handler: list}},
			Metadata: "podresources_v1.proto",
		}, struct{}{})
		go ps.Serve(pl)
		defer ps.Stop()
		fmt.Println("nodepeer: serving PodResources on", *podres)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
