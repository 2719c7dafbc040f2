// gpu-device-plugin: a fake NVIDIA device plugin for the simulated cluster's real nodes. It
// speaks the kubelet's deviceplugin/v1beta1 API, advertises -count healthy devices of -resource
// (nvidia.com/gpu), and on Allocate sets NVIDIA_VISIBLE_DEVICES to the devices given, as NVIDIA's
// plugin does; no device node is mounted (there is no GPU). A kubelet that restarts forgets every
// plugin: this one watches kubelet.sock and registers again whenever it is created anew.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	api.UnimplementedDevicePluginServer
	devices []*api.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return &api.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *api.Empty, stream api.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&api.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done() // the devices never change
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	resp := &api.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &api.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	return &api.PreStartContainerResponse{}, nil
}

func inode(path string) uint64 {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0
	}
	return st.Ino
}

func register(kubeletSocket, endpoint, resource string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: api.Version, Endpoint: endpoint, ResourceName: resource,
	})
	return err
}

func main() {
	dir := flag.String("dir", api.DevicePluginPath, "the kubelet's device-plugins directory")
	resource := flag.String("resource", "nvidia.com/gpu", "the extended resource advertised")
	count := flag.Int("count", 8, "how many devices")
	flag.Parse()
	p := &plugin{}
	for i := 0; i < *count; i++ {
		p.devices = append(p.devices, &api.Device{ID: fmt.Sprintf("GPU-fake-%d", i), Health: api.Healthy})
	}
	endpoint := "nemotron-fake-gpu.sock"
	kubeletSocket := filepath.Join(*dir, "kubelet.sock")
	var registered uint64 // the inode of the kubelet.sock registered with
	var server *grpc.Server
	for {
		if ino := inode(kubeletSocket); ino != 0 && ino != registered {
			// The kubelet removes every socket in the directory when it starts: serve anew.
			if server != nil {
				server.Stop()
			}
			path := filepath.Join(*dir, endpoint)
			_ = os.Remove(path)
			listener, err := net.Listen("unix", path)
			if err != nil {
				log.Fatalf("listen %s: %v", path, err)
			}
			server = grpc.NewServer()
			api.RegisterDevicePluginServer(server, p)
			go func(s *grpc.Server) { _ = s.Serve(listener) }(server)
			if err := register(kubeletSocket, endpoint, *resource); err != nil {
				log.Printf("registering with %s: %v (retrying)", kubeletSocket, err)
				server.Stop()
				server = nil
			} else {
				log.Printf("registered %d x %s with %s", *count, *resource, kubeletSocket)
				registered = ino
			}
		}
		time.Sleep(time.Second)
	}
}
