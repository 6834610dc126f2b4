package cmdutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"gopkg.in/yaml.v3"
)

// goreleaserVersion is the newest GoReleaser that builds with the Go release
// in go.mod (later ones need a newer Go).
const goreleaserVersion = "v2.15.1"

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// The deb and rpm packages install the generated completion scripts where
// bash-completion, zsh and fish look for them, and archives carry them.
func TestReleaseShipsCompletions(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Archives []struct {
			Files []string `yaml:"files"`
		} `yaml:"archives"`
		Nfpms []struct {
			Formats  []string `yaml:"formats"`
			Contents []struct {
				Src string `yaml:"src"`
				Dst string `yaml:"dst"`
			} `yaml:"contents"`
		} `yaml:"nfpms"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || len(cfg.Builds) != 1 || len(cfg.Archives) != 1 || len(cfg.Nfpms) != 1 {
		t.Fatalf("unexpected shape: %+v", cfg)
	}
	if g, a := cfg.Builds[0].Goos, cfg.Builds[0].Goarch; len(g) != 2 || len(a) != 2 {
		t.Errorf("builds for %v on %v, want linux and darwin on amd64 and arm64", g, a)
	}
	want := map[string]string{
		"completions/ktool.bash": "/usr/share/bash-completion/completions/ktool",
		"completions/ktool.zsh":  "/usr/share/zsh/vendor-completions/_ktool",
		"completions/ktool.fish": "/usr/share/fish/vendor_completions.d/ktool.fish",
	}
	got := map[string]string{}
	for _, c := range cfg.Nfpms[0].Contents {
		got[c.Src] = c.Dst
	}
	for src, dst := range want {
		if got[src] != dst {
			t.Errorf("%s installed at %q, want %q", src, got[src], dst)
		}
		if _, err := os.Stat(filepath.Join(root, src)); err != nil {
			t.Errorf("packaged file missing: %v", err)
		}
	}
	files := map[string]bool{}
	for _, f := range cfg.Archives[0].Files {
		files[f] = true
	}
	if !files["completions/*"] || !files["README.md"] {
		t.Errorf("archives carry %v, want the completions and README.md", cfg.Archives[0].Files)
	}
}

// TestGoreleaserCheck runs `goreleaser check`. GoReleaser is fetched from the
// Go module proxy and built, which takes minutes: it runs only with
// KTOOL_GORELEASER_CHECK=1.
func TestGoreleaserCheck(t *testing.T) {
	if os.Getenv("KTOOL_GORELEASER_CHECK") != "1" {
		t.Skip("set KTOOL_GORELEASER_CHECK=1 to run goreleaser check (downloads GoReleaser)")
	}
	cmd := exec.Command("go", "run", "github.com/goreleaser/goreleaser/v2@"+goreleaserVersion, "check", "--config", "goreleaser.yaml")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}
