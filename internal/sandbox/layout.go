package sandbox

// The layout inside every computer. Per-session folders are private to
// one session; per-agent folders are shared by the agent's sessions.
const (
	GuestHome        = "/root"            // home, part of the persistent rootfs
	GuestWorkspace   = "/workspace"       // per session; the default working directory
	GuestAttachments = "/den/attachments" // per session: files the user sent
	GuestOffloads    = "/den/offloads"    // per session: full output of capped commands
	GuestBrowser     = "/den/browser"     // per session: screenshots and downloads
	GuestMemory      = "/den/memory"      // per agent
	GuestSkills      = "/den/skills"      // per agent
	GuestShared      = "/den/shared"      // per agent
	GuestRun         = "/run/den"         // den's control folder, read-only inside
)

// SessionDirs are the per-session folders: name on the host → guest path.
var SessionDirs = []struct{ Name, Guest string }{
	{"workspace", GuestWorkspace},
	{"attachments", GuestAttachments},
	{"offloads", GuestOffloads},
	{"browser", GuestBrowser},
}

// AgentDirs are the per-agent folders: name on the host → guest path.
var AgentDirs = []struct{ Name, Guest string }{
	{"memory", GuestMemory},
	{"skills", GuestSkills},
	{"shared", GuestShared},
}
