package browser

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// site is the test web site, served inside the computer: a login the
// server checks, a late single-page app, an infinite feed, frames and a
// shadow-DOM widget, a download, an upload, a page that changes under
// an index, and a form full of secrets.
type site struct {
	mux *http.ServeMux

	mu       sync.Mutex
	uploads  map[string]string // file name → content
	clicks   map[string]int    // button → clicks the server saw
	logins   int
	lastAuth string
}

func newSite() *site {
	s := &site{mux: http.NewServeMux(), uploads: map[string]string{}, clicks: map[string]int{}}
	page := func(path, body string) {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, body)
		})
	}
	page("/{$}", `<!doctype html><title>Home</title><h1>Test site</h1><p>Pages: <a href="/login">Log in</a> <a href="/spa">App</a></p>`)
	page("/login", loginPage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("/account", s.account)
	page("/spa", spaPage)
	s.mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `["Apples","Bread","Cheese"]`)
	})
	page("/feed", feedPage)
	s.mux.HandleFunc("/api/feed", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var items []string
		if n < 5 {
			for i := range 10 {
				items = append(items, fmt.Sprintf(`"Post number %d"`, n*10+i+1))
			}
		}
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "["+strings.Join(items, ",")+"]")
	})
	page("/frames", framesPage)
	page("/frame-inner", frameInner)
	page("/download", `<!doctype html><title>Files</title><a href="/files/report.csv">Get the report</a>`)
	s.mux.HandleFunc("/files/report.csv", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
		io.WriteString(w, "a,b\n1,2\n")
	})
	page("/upload", uploadPage)
	s.mux.HandleFunc("POST /upload", s.upload)
	page("/stale", stalePage)
	s.mux.HandleFunc("POST /click/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.clicks[r.PathValue("name")]++
		s.mu.Unlock()
	})
	page("/secret", secretPage)
	page("/buttons", buttonsPage)
	page("/article", articlePage())
	page("/format", formatPage)
	page("/covered", coveredPage)
	page("/hog", hogPage)
	s.mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	return s
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *site) clicked(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clicks[name]
}

// hogPage keeps 16 MiB buffers, every page of them written so that
// they are resident, up to 1 GiB, when its button is clicked.
const hogPage = `<!doctype html><title>Hog</title>
<button onclick="eat()">Eat memory</button>
<script>
var kept = [];
function eat() {
  for (var i = 0; i < 64; i++) {
    var b = new Uint8Array(16 << 20);
    for (var j = 0; j < b.length; j += 4096) b[j] = 1;
    kept.push(b);
  }
  document.title = "Ate " + kept.length * 16 + " MiB";
}
</script>`

const loginPage = `<!doctype html><title>Sign in</title>
<h1>Sign in</h1>
<form method=post action=/login>
<label>Username <input name=user autocomplete=username></label>
<label>Password <input name=pass type=password></label>
<label><input type=checkbox name=remember> Remember me</label>
<button type=submit>Sign in</button>
</form>`

func (s *site) login(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	s.mu.Lock()
	s.logins++
	s.mu.Unlock()
	if r.PostForm.Get("user") != "ada" || r.PostForm.Get("pass") != "lovelace" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `<!doctype html><title>Sign in</title><h1>Wrong password</h1><a href="/login">Try again</a>`)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cr3t-session-value", Path: "/", HttpOnly: true})
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

func (s *site) account(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie("sid")
	w.Header().Set("Content-Type", "text/html")
	if err != nil || c.Value != "s3cr3t-session-value" {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<!doctype html><title>Account</title><p>Not signed in</p>`)
		return
	}
	io.WriteString(w, `<!doctype html><title>Account</title><h1>Welcome, ada</h1><p>Your balance is 42.</p>`)
}

// spaPage renders nothing useful until a script fetched its data.
const spaPage = `<!doctype html><title>App</title><div id=app>Loading…</div>
<script>
setTimeout(async () => {
  const items = await (await fetch('/api/items')).json();
  const app = document.getElementById('app');
  app.innerHTML = '<h2>Groceries</h2><ul>' + items.map(i => '<li>' + i + '</li>').join('') + '</ul><button id=add>Add item</button>';
  document.getElementById('add').onclick = () => { const li = document.createElement('li'); li.textContent = 'Dates'; app.querySelector('ul').append(li); };
}, 200);
</script>`

// feedPage loads ten posts at a time when its end comes into view.
const feedPage = `<!doctype html><title>Feed</title><h1>Feed</h1><div id=feed></div><div id=end style="height:10px"></div>
<script>
let page = 0, busy = false;
async function more() {
  if (busy) return; busy = true;
  const items = await (await fetch('/api/feed?page=' + page++)).json();
  for (const t of items) { const a = document.createElement('article'); a.className = 'post'; a.style.height = '120px'; a.textContent = t; feed.append(a); }
  busy = false;
}
new IntersectionObserver((e) => { if (e[0].isIntersecting) more(); }).observe(end);
</script>`

const framesPage = `<!doctype html><title>Frames</title>
<h1>Frames and widgets</h1>
<iframe src="/frame-inner" title="Inner frame" width=400 height=150></iframe>
<p id=out>no shadow clicks</p>
<fancy-widget></fancy-widget>
<script>
customElements.define('fancy-widget', class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({mode: 'open'});
    root.innerHTML = '<p>Shadow text</p><button id=sb>Shadow button</button>';
    let n = 0;
    root.getElementById('sb').onclick = () => { document.getElementById('out').textContent = 'shadow clicks: ' + (++n); };
  }
});
</script>`

const frameInner = `<!doctype html><title>Inner</title><p id=msg>inner waiting</p>
<button onclick="document.getElementById('msg').textContent='inner clicked'">Inner button</button>`

const uploadPage = `<!doctype html><title>Upload</title>
<form method=post action=/upload enctype=multipart/form-data>
<label>Document <input type=file name=doc></label>
<button type=submit>Send</button>
</form>`

func (s *site) upload(w http.ResponseWriter, r *http.Request) {
	f, h, err := r.FormFile("doc")
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	b, _ := io.ReadAll(f)
	s.mu.Lock()
	s.uploads[h.Filename] = string(b)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, `<!doctype html><title>Received</title><p>Received %s (%d bytes)</p>`, html.EscapeString(h.Filename), len(b))
}

// stalePage swaps its buttons when "Shuffle" is clicked: the button
// where "Keep" was becomes "Delete all". Each click is told to the
// server.
const stalePage = `<!doctype html><title>Stale</title>
<div id=list><button data-n=keep>Keep</button> <button data-n=archive>Archive</button></div>
<button id=shuffle>Shuffle</button>
<script>
const tell = (n) => fetch('/click/' + n, {method: 'POST'});
document.addEventListener('click', (e) => { const n = e.target.dataset && e.target.dataset.n; if (n) tell(n); });
shuffle.onclick = () => { list.innerHTML = '<button data-n=deleteall>Delete all</button> <button data-n=keep>Keep</button>'; };
</script>`

const secretPage = `<!doctype html><title>Checkout</title>
<form>
<label>Email <input name=email value="ada@example.com"></label>
<label>Password <input type=password name=pw value="hunter2"></label>
<label>Card <input name=cardnumber autocomplete="cc-number" value="4111 1111 1111 1111"></label>
<label>Code <input name=code autocomplete="one-time-code" value="314159"></label>
<label>Reference <input name=ref value="5555555555554444"></label>
</form>
<p>Card on file: 4242 4242 4242 4242</p>`

const buttonsPage = `<!doctype html><title>Buttons</title>
<p id=count>0</p>
<button id=inc onclick="count.textContent = +count.textContent + 1">Increment</button>
<button id=noop>Nothing</button>
<select id=size><option value=s>Small</option><option value=m>Medium</option><option value=l>Large</option></select>
<input id=q placeholder="Search">
<div style="height:3000px"></div><p>Bottom of the page</p>`

// coveredPage has a button under an overlay, until the overlay is
// closed.
const coveredPage = `<!doctype html><title>Covered</title>
<button id=under onclick="fetch('/click/under', {method: 'POST'})">Under</button>
<div id=overlay style="position:fixed;inset:0;background:rgba(0,0,0,.3)"><button id=close style="position:absolute;right:10px;bottom:10px" onclick="overlay.remove()">Close</button></div>`

// formatPage has one of each thing a snapshot describes.
const formatPage = `<!doctype html><title>Format</title>
<nav aria-label="Main"><a href="/">Home</a> <a href="https://example.org/docs">Docs</a></nav>
<main>
<h1>All the parts</h1>
<p>Some <b>bold</b> text and a <a href="/more">link inside</a> a paragraph.</p>
<img src="data:," alt="A red bicycle">
<h2>Lists</h2>
<ul><li>First</li><li>Second</li></ul>
<table><tr><th>Name</th><th>Qty</th></tr><tr><td>Pears</td><td>3</td></tr></table>
<form aria-label="Order">
<label>Name <input name=n value="Ada" required></label>
<label><input type=radio name=r checked> Pickup</label>
<label><input type=radio name=r> Delivery</label>
<label>Size <select><option>S<option selected>M</select></label>
<label>Notes <textarea>ring twice</textarea></label>
<button disabled>Pay</button>
</form>
<details><summary>More options</summary><p>Hidden until open</p></details>
<div role=dialog aria-label="Cookies"><p>We use cookies.</p><button>Accept</button></div>
</main>`

// articlePage is a typical content page: navigation, an article of
// about 1,500 words with headings, links and a table, a sidebar and a
// footer.
func articlePage() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><title>The history of the bicycle</title><header><nav><a href="/">Home</a>`)
	for i := range 25 {
		fmt.Fprintf(&b, ` <a href="/topic/%d">Topic %d</a>`, i, i)
	}
	b.WriteString(`</nav><form role=search><input type=search aria-label="Search the site"><button>Search</button></form></header><main><article><h1>The history of the bicycle</h1>`)
	for s := range 6 {
		fmt.Fprintf(&b, `<h2>Part %d: from draisine to safety bicycle</h2>`, s+1)
		for p := range 4 {
			fmt.Fprintf(&b, `<p>In the %dth paragraph of part %d, the story goes on: early machines were heavy, their riders sat high above the road, and the <a href="/wiki/%d-%d">inventors</a> argued about gears, chains and tyres for decades before a design that most people could ride safely was settled, sold and copied across Europe.</p>`, p+1, s+1, s, p)
		}
	}
	b.WriteString(`<table><tr><th>Year</th><th>Machine</th></tr><tr><td>1817</td><td>Draisine</td></tr><tr><td>1885</td><td>Rover safety bicycle</td></tr></table></article></main><aside><h2>Related</h2><ul>`)
	for i := range 15 {
		fmt.Fprintf(&b, `<li><a href="/related/%d">Related article %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></aside><footer><p>© Test site</p><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>`)
	return b.String()
}
