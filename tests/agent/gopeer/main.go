// A kubelet stand-in written with grpc-go, dialling the way the kubelet's
// device manager does (pkg/kubelet/cm/devicemanager/plugin/v1beta1): blocking
// dial over the unix socket, authority "localhost", and GetDevicePluginOptions
// called back *inside* the Register handler before it replies. Prints TAP.
//
// Built offline from Debian's golang-google-grpc-dev (1.33) in GOPATH mode by
// tests/agent/kubelet_go_test.sh. grpc-go 1.33 defaults to the APIv1 codec,
// which panics on protoc-gen-go 1.28 messages, so the "proto" codec is
// replaced by an APIv2 one.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"

	dp "gpuslice/tests/deviceplugin"
)

type codecV2 struct{}

func (codecV2) Marshal(v interface{}) ([]byte, error)   { return proto.Marshal(v.(proto.Message)) }
func (codecV2) Unmarshal(b []byte, v interface{}) error { return proto.Unmarshal(b, v.(proto.Message)) }
func (codecV2) Name() string                            { return "proto" }

var n, failed int

func tap(ok bool, name string, detail ...interface{}) {
	n++
	if ok {
		fmt.Printf("ok %d - %s\n", n, name)
		return
	}
	failed++
	fmt.Printf("not ok %d - %s\n", n, name)
	if len(detail) > 0 {
		fmt.Printf("#   %v\n", detail)
	}
}

type registered struct {
	req  *dp.RegisterRequest
	opts *dp.DevicePluginOptions
	err  error
	conn *grpc.ClientConn
}

type registration struct {
	dir string
	ch  chan registered
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

func (r *registration) register(srv interface{}, ctx context.Context, dec func(interface{}) error,
	_ grpc.UnaryServerInterceptor) (interface{}, error) {
	req := new(dp.RegisterRequest)
	if err := dec(req); err != nil {
		return nil, err
	}
	conn, err := dial(r.dir + "/" + req.Endpoint)
	var opts *dp.DevicePluginOptions
	if err == nil {
		opts = new(dp.DevicePluginOptions)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = conn.Invoke(cctx, "/v1beta1.DevicePlugin/GetDevicePluginOptions", &dp.Empty{}, opts)
		cancel()
	}
	r.ch <- registered{req, opts, err, conn}
	return &dp.Empty{}, nil
}

func main() {
	dir := flag.String("dir", "", "device-plugins folder")
	flag.Parse()
	encoding.RegisterCodec(codecV2{})

	reg := &registration{dir: *dir, ch: make(chan registered, 8)}
	lis, err := net.Listen("unix", *dir+"/kubelet.sock")
	if err != nil {
		fmt.Printf("Bail out! listen: %v\n", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "v1beta1.Registration",
		HandlerType: (*interface{})(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Register", Handler: reg.register}},
		Metadata:    "deviceplugin_v1beta1.proto",
	}, struct{}{})
	go s.Serve(lis)
	defer s.Stop()
	fmt.Println("# go kubelet listening")

	got := map[string]registered{}
	timeout := time.After(20 * time.Second)
	for len(got) < 3 {
		select {
		case r := <-reg.ch:
			got[r.req.ResourceName] = r
		case <-timeout:
			tap(false, "three resources register", len(got))
			fmt.Printf("1..%d\n", n)
			os.Exit(1)
		}
	}
	tap(true, "three resources register with the go kubelet")
	allOK := true
	for _, r := range got {
		if r.err != nil || r.opts == nil || !r.opts.GetPreferredAllocationAvailable || r.req.Version != "v1beta1" {
			allOK = false
			tap(false, "GetDevicePluginOptions inside Register", r.req.ResourceName, r.err)
		}
	}
	tap(allOK, "GetDevicePluginOptions answered inside Register over a blocking dial (authority localhost)")

	mem := got["gpuslice.io/gpu-memory"]
	if mem.conn == nil {
		fmt.Printf("1..%d\n", n)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := mem.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/v1beta1.DevicePlugin/ListAndWatch")
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
	tap(err == nil && len(list.Devices) > 0 && list.Devices[0].Health == "Healthy",
		"ListAndWatch streams the memory units", err, len(list.Devices))

	var pref dp.PreferredAllocationResponse
	ids := []string{}
	for _, d := range list.Devices[:8] {
		ids = append(ids, d.ID)
	}
	err = mem.conn.Invoke(ctx, "/v1beta1.DevicePlugin/GetPreferredAllocation", &dp.PreferredAllocationRequest{
		ContainerRequests: []*dp.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: ids, AllocationSize: 4}}}, &pref)
	tap(err == nil && len(pref.ContainerResponses) == 1 && len(pref.ContainerResponses[0].DeviceIDs) == 4,
		"GetPreferredAllocation answers 4 IDs", err)

	var resp dp.AllocateResponse
	err = mem.conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &dp.AllocateRequest{
		ContainerRequests: []*dp.ContainerAllocateRequest{{DevicesIds: ids[:4]}}}, &resp)
	ok := err == nil && len(resp.ContainerResponses) == 1
	if ok {
		c := resp.ContainerResponses[0]
		ok = strings.HasPrefix(c.Envs["GPUSLICE_SLICE_ID"], "gs-") && len(c.Mounts) == 5
	}
	tap(ok, "Allocate answers env and mounts", err)

	err = mem.conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &dp.AllocateRequest{
		ContainerRequests: []*dp.ContainerAllocateRequest{{DevicesIds: []string{"nope"}}}}, &resp)
	tap(err != nil && strings.Contains(err.Error(), "InvalidArgument") && strings.Contains(err.Error(), "unknown device ID"),
		"unknown device ID comes back as InvalidArgument with the reason", err)

	fmt.Printf("1..%d\n", n)
	if failed > 0 {
		os.Exit(1)
	}
}
