package cmdscan

import (
	"slices"
	"strings"
	"testing"
)

var testMounts = []Mount{
	{Guest: "/mnt/photos"},
	{Guest: "/mnt/docs", ReadOnly: true},
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		script string
		cwd    string
		want   []string // exact labels
	}{
		{"ls", "ls -la /etc", "/root", []string{"read_only"}},
		{"pipeline read", "cat /etc/passwd | grep root | wc -l", "/root", []string{"read_only"}},
		{"echo in quotes", `echo "rm -rf /"`, "/root", []string{"read_only"}},
		{"comment", "ls # rm -rf /", "/root", []string{"read_only"}},
		{"version", "python3 --version", "/root", []string{"read_only"}},
		{"redirect", "echo hi > out.txt", "/root", []string{"writes"}},
		{"devnull", "ls 2>/dev/null >/dev/null", "/root", []string{"read_only"}},
		{"dup fd", "ls 2>&1", "/root", []string{"read_only"}},
		{"mkdir", "mkdir -p build", "/root", []string{"writes"}},
		{"sed -i", "sed -i 's/a/b/' f.txt", "/root", []string{"writes"}},
		{"sed read", "sed 's/a/b/' f.txt", "/root", []string{"read_only"}},
		{"tee", "echo x | tee log", "/root", []string{"writes"}},
		{"rm tmp", "rm /tmp/x.txt", "/root", []string{"writes"}},
		{"rm tmp relative", "rm x.txt", "/tmp", []string{"writes"}},
		{"rm outside tmp", "rm notes.txt", "/root", []string{"writes", "destructive"}},
		{"rm -rf tmp", "rm -rf /tmp/build", "/root", []string{"writes", "destructive"}},
		{"rm -f", "rm -f x", "/tmp", []string{"writes", "destructive"}},
		{"find delete", "find . -name '*.o' -delete", "/root", []string{"writes", "destructive"}},
		{"find exec rm", `find /var/log -name '*.gz' -exec rm {} \;`, "/root", []string{"writes", "destructive"}},
		{"find read", "find . -name '*.go'", "/root", []string{"read_only"}},
		{"dd device", "dd if=/dev/zero of=/dev/sda bs=1M", "/root", []string{"writes", "destructive"}},
		{"dd file", "dd if=/dev/zero of=disk.img bs=1M count=1", "/root", []string{"writes"}},
		{"redirect device", "echo x > /dev/sda", "/root", []string{"writes", "destructive"}},
		{"mkfs", "mkfs.ext4 /dev/vdb", "/root", []string{"writes", "destructive"}},
		{"truncate", "truncate -s 0 app.log", "/root", []string{"writes", "destructive"}},
		{"chmod -R broad", "chmod -R 777 /", "/root", []string{"writes", "destructive"}},
		{"chmod -R narrow", "chmod -R u+w /root/project/build", "/root", []string{"writes"}},
		{"chmod file", "chmod +x run.sh", "/root", []string{"writes"}},
		{"git status", "git status && git log --oneline -5", "/root", []string{"read_only"}},
		{"git reset hard", "git reset --hard HEAD~1", "/root", []string{"writes", "destructive"}},
		{"git clean", "git clean -fdx", "/root", []string{"writes", "destructive"}},
		{"git commit", "git add . && git commit -m 'rm -rf'", "/root", []string{"writes"}},
		{"git clone", "git clone https://github.com/x/y", "/root", []string{"writes", "network"}},
		{"git push force", "git push --force origin main", "/root", []string{"writes", "destructive", "network"}},
		{"curl stdout", "curl -s https://example.com", "/root", []string{"read_only", "network"}},
		{"curl -o", "curl -sLo out.html https://example.com", "/root", []string{"writes", "network"}},
		{"wget", "wget https://example.com/f.tgz", "/root", []string{"writes", "network"}},
		{"wget stdout", "wget -qO- https://example.com", "/root", []string{"read_only", "network"}},
		{"ssh", "ssh host uptime", "/root", []string{"network", "runs_code"}},
		{"http server", "python3 -m http.server 8000", "/root", []string{"read_only", "network"}},
		{"apk add", "apk add --no-cache bash", "/root", []string{"writes", "network", "package_install"}},
		{"apt install", "apt-get install -y jq", "/root", []string{"writes", "network", "package_install"}},
		{"pip install", "pip install requests", "/root", []string{"writes", "network", "package_install"}},
		{"python -m pip", "python3 -m pip install -U pip", "/root", []string{"writes", "network", "package_install"}},
		{"npm global", "npm i -g typescript", "/root", []string{"writes", "network", "package_install"}},
		{"cargo install", "cargo install ripgrep", "/root", []string{"writes", "network", "package_install"}},
		{"go install", "go install golang.org/x/tools/gopls@latest", "/root", []string{"writes", "network", "package_install"}},
		{"sudo apk", "sudo apk add git", "/root", []string{"writes", "network", "package_install"}},
		{"env wrapper", "env FOO=1 rm -rf /srv/app", "/root", []string{"writes", "destructive"}},
		{"nice timeout nohup", "nohup nice -n 10 timeout 5s rm -r old", "/root", []string{"writes", "destructive"}},
		{"sh -c", `sh -c 'rm -rf /srv/app'`, "/root", []string{"writes", "destructive"}},
		{"bash -lc", `bash -lc "curl -s https://x.dev"`, "/root", []string{"read_only", "network"}},
		{"sh -c nested", `sh -c "bash -c 'apk add curl'"`, "/root", []string{"writes", "network", "package_install"}},
		{"eval", `eval "rm -rf /srv"`, "/root", []string{"writes", "destructive"}},
		{"xargs rm", "find . -name '*.tmp' | xargs rm", "/root", []string{"writes", "destructive"}},
		{"subshell", "(cd /srv && rm -r cache)", "/root", []string{"writes", "destructive"}},
		{"cmd subst", "echo $(rm -f x)", "/root", []string{"writes", "destructive"}},
		{"loop", "for f in *.txt; do mv \"$f\" done/; done", "/root", []string{"writes"}},
		{"function", "clean() { rm -rf dist; }; clean", "/root", []string{"writes", "destructive"}},
		{"curl pipe sh", "curl -fsSL https://get.x.dev | sh", "/root", []string{"network", "runs_code"}},
		{"python script", "python3 train.py", "/root", []string{"runs_code"}},
		{"computed command", `$CMD --all`, "/root", []string{"runs_code"}},
		{"host command", "den-notify --title done 'build finished'", "/root", []string{"read_only", "host_command"}},
		{"xdg-open", "xdg-open https://example.com", "/root", []string{"read_only", "host_command"}},
		{"parse error", "if [ x ]; then", "/root", []string{"writes", "network", "unknown"}},
		{"nested parse error", `sh -c 'if then'`, "/root", []string{"writes", "network", "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := Classify(tt.script, tt.cwd, nil)
			if got := c.Labels(); !slices.Equal(got, tt.want) {
				t.Errorf("Classify(%q) = %v, want %v\nreasons: %q", tt.script, got, tt.want, c.Reasons())
			}
		})
	}
}

func TestClassifyMounts(t *testing.T) {
	type use struct {
		mount  string
		access Access
		maybe  bool
	}
	tests := []struct {
		name        string
		script, cwd string
		want        []use
		destroysRW  bool
	}{
		{"none", "ls /etc", "/root", nil, false},
		{"absolute read", "cat /mnt/docs/a.txt", "/root", []use{{"/mnt/docs", Read, false}}, false},
		{"relative in mount", "rm -rf build", "/mnt/photos/2024", []use{{"/mnt/photos", Destroy, false}}, true},
		{"dot dot escape", "rm -rf ../../../root/x", "/mnt/photos/2024", nil, false},
		{"dot dot into other mount", "cat ../../docs/f", "/mnt/photos/2024", []use{{"/mnt/docs", Read, false}}, false},
		{"cd then relative", "cd /mnt/photos && rm -r old", "/root", []use{{"/mnt/photos", Destroy, false}}, true},
		{"cd in subshell does not leak", "(cd /mnt/photos) && rm -r old", "/root", nil, false},
		{"redirect write", "echo x >> /mnt/photos/log", "/root", []use{{"/mnt/photos", Write, false}}, false},
		{"read-only mount destroy", "rm -rf /mnt/docs/old", "/root", []use{{"/mnt/docs", Destroy, false}}, false},
		{"ancestor recursive", "rm -rf /mnt", "/root", []use{{"/mnt/photos", Destroy, false}, {"/mnt/docs", Destroy, false}}, true},
		{"ancestor glob maybe", "rm /mnt/*/x", "/root", []use{{"/mnt/photos", Destroy, true}, {"/mnt/docs", Destroy, true}}, true},
		{"variable under mount", `rm -f "/mnt/photos/$name"`, "/root", []use{{"/mnt/photos", Destroy, false}}, true},
		{"unknown target", `rm -rf "$DIR"`, "/root", []use{{"/mnt/photos", Destroy, true}}, true},
		{"xargs unknown", "ls | xargs rm", "/root", []use{{"/mnt/photos", Destroy, true}}, true},
		{"git in mount", "git reset --hard", "/mnt/photos/repo", []use{{"/mnt/photos", Destroy, false}}, true},
		{"git -C", "git -C /mnt/photos/repo clean -fd", "/root", []use{{"/mnt/photos", Destroy, false}}, true},
		{"find exec", `find /mnt/photos -name '*.tmp' -exec rm {} +`, "/root", []use{{"/mnt/photos", Destroy, false}, {"/mnt/photos", Read, false}}, true},
		{"sh -c in mount", `sh -c 'rm -rf cache'`, "/mnt/photos", []use{{"/mnt/photos", Destroy, false}}, true},
		{"cp into mount", "cp /tmp/a.jpg /mnt/photos/", "/root", []use{{"/mnt/photos", Write, false}}, false},
		{"similar prefix", "rm -rf /mnt/photos-old", "/root", nil, false},
		{"unknown cwd relative", "rm -rf build", "", []use{{"/mnt/photos", Destroy, true}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Classify(tt.script, tt.cwd, testMounts)
			if err != nil {
				t.Fatal(err)
			}
			var got []use
			for _, m := range c.Mounts {
				got = append(got, use{m.Mount.Guest, m.Access, m.Maybe})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Classify(%q, %q) mounts = %v, want %v\nreasons: %q", tt.script, tt.cwd, got, tt.want, c.Reasons())
			}
			if c.Has(TouchesMount) != (len(tt.want) > 0) {
				t.Errorf("touches_mount = %v, want %v", c.Has(TouchesMount), len(tt.want) > 0)
			}
			if got := c.DestroysWritableMount(); got != tt.destroysRW {
				t.Errorf("DestroysWritableMount() = %v, want %v", got, tt.destroysRW)
			}
		})
	}
}

func TestClassifyParseError(t *testing.T) {
	c, err := Classify("echo 'unterminated", "/mnt/photos", testMounts)
	if err == nil {
		t.Fatal("want a parse error")
	}
	if !c.Has(Unknown|Writes|Network) || c.ReadOnly() {
		t.Errorf("class %v, want unknown, writes and network", c.Labels())
	}
	if !c.DestroysWritableMount() {
		t.Error("an unparsable script must count as possibly destroying a read-write mount")
	}
}

func TestClassifyReasons(t *testing.T) {
	c, _ := Classify("ls\nrm -rf /mnt/photos/x", "/root", testMounts)
	r := strings.Join(c.Reasons(), "\n")
	for _, want := range []string{"2:1 destructive: rm -rf", "destroy /mnt/photos/x in read-write mount /mnt/photos"} {
		if !strings.Contains(r, want) {
			t.Errorf("Reasons() = %q, want it to contain %q", r, want)
		}
	}
	if got := c.WritableMounts(); !slices.Equal(got, []string{"/mnt/photos"}) {
		t.Errorf("WritableMounts() = %v", got)
	}
	c, _ = Classify("den-notify a; den-open x; den-notify b", "/", nil)
	if !slices.Equal(c.HostCommands, []string{"den-notify", "den-open"}) {
		t.Errorf("HostCommands = %v", c.HostCommands)
	}
}

// script50 is a realistic 50-line script for the benchmark.
var script50 = strings.Repeat(`set -e
cd /mnt/photos/project
if [ ! -d build ]; then mkdir -p build; fi
for f in src/*.c; do
  gcc -c "$f" -o "build/$(basename "$f" .c).o" 2>>build/log.txt
done
find build -name '*.tmp' -delete
tar czf /tmp/out.tgz build && curl -fsS -T /tmp/out.tgz https://example.com/up
git status --short | grep -v '^??' | xargs -r git add
echo "done: $(date)" | tee -a build/summary.txt
`, 5)

func BenchmarkClassify50Lines(b *testing.B) {
	if n := strings.Count(script50, "\n"); n != 50 {
		b.Fatalf("script has %d lines", n)
	}
	for b.Loop() {
		if _, err := Classify(script50, "/root", testMounts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBashisms50Lines(b *testing.B) {
	for b.Loop() {
		Bashisms(script50)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"ls", "rm -rf /", script50, "sh -c 'sh -c \"sh -c x\"'", "a=(1 2); echo ${a[@]}",
		"find . -exec {} \\;", "xargs", "env -C / -S 'rm x'", "cat <<E\n$(rm x)\nE", "git -C",
		"f() { f; }; f", "[[ $x =~ ^a ]]", "tar -xf", "eval", "dd of=", "cd ..; cd ../..; rm -rf .",
	} {
		f.Add(s, "/mnt/photos/a")
	}
	f.Fuzz(func(t *testing.T, script, cwd string) {
		c, _ := Classify(script, cwd, testMounts)
		_ = c.Labels()
		_ = c.Reasons()
		_ = c.DestroysWritableMount()
		for _, b := range Bashisms(script) {
			_ = b.String()
		}
	})
}

func TestChangesShell(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   bool
	}{
		{"cat /etc/os-release", false},
		{"ls -la | grep x", false},
		{"echo $HOME; uname -a", false},
		{"cd /tmp", true},
		{"mkdir d && cd d", true},
		{"export A=1", true},
		{"A=1", true},
		{"A=1 env", false},
		{"f() { ls; }", true},
		{"source ./env.sh", true},
		{". ./env.sh", true},
		{"set -e; ls", true},
		{"alias ll='ls -l'", true},
		{"local x=1", true},
		{"$CMD --version", true},
		{"if [ -d x ]; then cd x; fi", true},
		{"(cd /tmp && ls)", true},
		{"echo 'unterminated", true},
	} {
		if got := ChangesShell(tt.script); got != tt.want {
			t.Errorf("ChangesShell(%q) = %v, want %v", tt.script, got, tt.want)
		}
	}
}
