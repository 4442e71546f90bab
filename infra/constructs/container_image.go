package constructs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/jsii-runtime-go"
)

// ContainerBaseImage is the base of a ContainerWorker's image: a static, non-root image with CA
// certificates and nothing else (the worker is one static Go binary).
var ContainerBaseImage = "gcr.io/distroless/static-debian12:nonroot"

// ContainerDockerfile is the Dockerfile a ContainerWorker's image is built from, at deploy: the
// binary built at synth, as the entrypoint of ContainerBaseImage (%s).
const ContainerDockerfile = `# Written by jobkit's ContainerWorker construct: the worker binary, built at synth from its Go
# package for linux/arm64, on a static non-root base.
FROM --platform=linux/arm64 %s
COPY worker /worker
USER nonroot:nonroot
ENTRYPOINT ["/worker"]
`

// containerImage builds s for linux/arm64 with the local Go toolchain into a fresh directory,
// writes ContainerDockerfile beside it and returns that directory as an image asset. Synth needs
// Go, not Docker: the deploy builds the image (a copy of one file). The build is reproducible
// (-trimpath, -buildvcs=false), so the asset changes only when the binary does.
func (s GoSource) containerImage() awsecs.ContainerImage {
	moduleDir := s.mustModuleDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		panic("jobkit: ContainerWorker needs a Go toolchain on PATH at synth to build " + s.pkgArg())
	}
	dir, err := os.MkdirTemp("", "jobkit-container-")
	if err != nil {
		panic(fmt.Sprintf("jobkit: ContainerWorker: %v", err))
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w",
		"-o", filepath.Join(dir, "worker"), s.pkgArg())
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		panic(fmt.Errorf("jobkit: go build %s for linux/arm64 in %s: %w", s.pkgArg(), moduleDir, err))
	}
	dockerfile := fmt.Sprintf(ContainerDockerfile, ContainerBaseImage)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		panic(fmt.Sprintf("jobkit: ContainerWorker: %v", err))
	}
	return awsecs.ContainerImage_FromAsset(jsii.String(dir), &awsecs.AssetImageProps{
		Platform: awsecrassets.Platform_LINUX_ARM64(),
	})
}
