//! A small W3C WebDriver client for the browser tests: headless Chromium driven through
//! `chromedriver` (Debian's `chromium` and `chromium-driver`; `.ci/run` installs them),
//! over plain HTTP and JSON. Blocking: call it from `spawn_blocking`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The WebDriver element key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where the browser and its driver are: `RC_CHROMEDRIVER` and `RC_CHROMIUM`, else the
/// Debian paths; `None` when either is missing.
pub fn tools() -> Option<(String, String)> {
    let driver =
        std::env::var("RC_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let browser = std::env::var("RC_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    (std::path::Path::new(&driver).exists() && std::path::Path::new(&browser).exists())
        .then_some((driver, browser))
}

/// A headless Chromium session; the driver is killed when dropped.
pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.call("DELETE", "", None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One HTTP/1.1 request with a JSON body; the status and the JSON answer.
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> std::io::Result<(u16, Value)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // The answer's headers, then its body to its Content-Length (the driver may keep the
    // connection open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let (head, mut body) = loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                String::from_utf8_lossy(&raw[..i]).into_owned(),
                raw[i + 4..].to_vec(),
            );
        }
    };
    let len = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    match len {
        Some(len) => {
            while body.len() < len {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&buf[..n]);
            }
        }
        None => {
            s.read_to_end(&mut body)?;
        }
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

impl Browser {
    /// Starts `chromedriver` and a headless Chromium of `width`×`height`.
    pub fn start(width: u32, height: u32) -> Self {
        let (driver_bin, browser_bin) = tools().expect(
            "headless Chromium for the browser tests: install Debian's chromium and chromium-driver (.ci/run does), or set RC_CHROMIUM and RC_CHROMEDRIVER",
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok((200, v)) = request(addr, "GET", "/status", None)
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser_bin,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    format!("--window-size={width},{height}")],
            },
        }}});
        let (status, v) = request(addr, "POST", "/session", Some(&caps)).expect("a session");
        assert_eq!(status, 200, "new session: {v}");
        let session = v["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        Self {
            driver,
            addr,
            session,
        }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> std::io::Result<(u16, Value)> {
        request(
            self.addr,
            method,
            &format!("/session/{}{path}", self.session),
            body,
        )
    }

    fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self
            .call(method, path, body.as_ref())
            .expect("the driver answers");
        assert_eq!(status, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.ok("POST", "/url", Some(json!({ "url": url })));
    }

    /// The element `css` selects (waits up to 10 s for it).
    pub fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, v) = self
                .call(
                    "POST",
                    "/element",
                    Some(&json!({"using": "css selector", "value": css})),
                )
                .expect("the driver answers");
            if status == 200
                && let Some(id) = v["value"][ELEMENT].as_str()
            {
                return id.to_owned();
            }
            assert!(Instant::now() < deadline, "no element {css}: {v}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `text` into the element `css` selects.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.ok("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.ok(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Clicks the element `css` selects (found again if the page re-rendered it first).
    pub fn click(&self, css: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let id = self.find(css);
            let (status, v) = self
                .call("POST", &format!("/element/{id}/click"), Some(&json!({})))
                .expect("the driver answers");
            if status == 200 {
                return;
            }
            // The page re-rendered between the find and the click (a live table): find
            // the element again.
            let stale = v["value"]["error"].as_str() == Some("stale element reference");
            assert!(
                stale && Instant::now() < deadline,
                "POST click {css}: {status} {v}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page; its result.
    pub fn eval(&self, script: &str, args: Value) -> Value {
        self.ok(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// The text of the element `css` selects ("" when there is none).
    pub fn text(&self, css: &str) -> String {
        self.eval(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
            json!([css]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    /// Waits up to `within` for `f` over the text of `css` to hold; the last text.
    pub fn wait_text(&self, css: &str, within: Duration, f: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let t = self.text(css);
            if f(&t) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "{css} never matched; it reads {t:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let b64 = self.ok("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap_or_default())
            .expect("a base64 PNG")
    }
}
