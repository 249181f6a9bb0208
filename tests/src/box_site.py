# A small web site served inside the box (python3, port 8000) for the box tests: the box's
# browser reaches it on its own 127.0.0.1, so no traffic leaves the container.
import http.server
import urllib.parse

PAGE = "<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"


class Site(http.server.BaseHTTPRequestHandler):
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def send(self, title, body, headers=()):
        data = PAGE.format(title=title, body=body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/":
            self.send("Home", '<h1>Home</h1><p>Welcome to the test site.</p>'
                      '<a href="/page/next">Next page</a> <button onclick="document.title=\'clicked\'">Press</button>')
        elif url.path == "/login":
            user = query.get("user", "nobody")
            self.send("Logged in", f"<p>logged in as {user}</p>",
                      [("Set-Cookie", f"session={user}; Max-Age=86400; Path=/")])
        elif url.path == "/whoami":
            cookies = self.headers.get("Cookie", "")
            session = "none"
            for part in cookies.split(";"):
                name, _, value = part.strip().partition("=")
                if name == "session":
                    session = value
            self.send("Who am I", f"<p>session={session}</p>")
        elif url.path.startswith("/page/"):
            name = url.path[len("/page/"):]
            self.send(f"Page {name}", f"<h1>{name}</h1><p>this is page {name}</p>")
        elif url.path == "/many":
            n = int(query.get("n", "1000"))
            items = "".join(
                f'<li><a href="/page/{i}">link {i}</a> text {i}</li>' if i % 2 == 0
                else f"<li><button>button {i}</button> item {i}</li>"
                for i in range(n))
            self.send("Many", f"<ul>{items}</ul>")
        elif url.path == "/form":
            self.send("Form", '<form action="/search"><input name="q" placeholder="search">'
                      '<button type="submit">Go</button></form>')
        elif url.path == "/clickpad":
            # A page the whole viewport of which reports each click (where, on the screen) to
            # /clicked, so a test sees a click's effect, not the tool's word for it.
            self.send("Click pad", '<div style="position:fixed;inset:0" onclick="fetch(\'/clicked?x=\''
                      ' + event.screenX + \'&y=\' + event.screenY)">click anywhere</div>')
        elif url.path == "/clicked":
            with open("/tmp/clicks.log", "a") as log:
                log.write(f"{query.get('x')},{query.get('y')}\n")
            self.send("Clicked", "<p>noted</p>")
        elif url.path == "/search":
            self.send("Results", f"<p>results for {query.get('q', '')}</p>")
        else:
            self.send_error(404)


http.server.ThreadingHTTPServer(("127.0.0.1", 8000), Site).serve_forever()
