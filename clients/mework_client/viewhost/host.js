// The host side of one MCP Apps view (meworkctl view): the ui/* JSON-RPC bridge over
// postMessage, with the sandbox proxy on its own origin. The view's requests go to meworkd
// through this page's server (/bridge), which names the call, its turn and its server itself.
(function () {
  "use strict";
  var token = new URLSearchParams(location.search).get("t");
  var view = null, frame = null, sandboxOrigin = null;
  var initialized = false, closed = false, nextId = 1;
  var waiting = {};
  var $ = function (id) { return document.getElementById(id); };

  function log(text) {
    var li = document.createElement("li");
    li.textContent = text;
    $("log").appendChild(li);
  }
  function status(text) { $("status").textContent = text; }
  function post(path, body) {
    return fetch(path, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Mework-Token": token},
      body: JSON.stringify(body)
    }).then(function (r) { return r.json(); });
  }
  function toView(message) {
    if (frame && frame.contentWindow) frame.contentWindow.postMessage(message, sandboxOrigin);
  }
  function reply(id, result) { toView({jsonrpc: "2.0", id: id, result: result}); }
  function fail(id, code, message, data) {
    var error = {code: code, message: message};
    if (data !== undefined) error.data = data;
    toView({jsonrpc: "2.0", id: id, error: error});
  }
  function notify(method, params) { toView({jsonrpc: "2.0", method: method, params: params}); }

  function wellFormed(m) {
    if (!m || typeof m !== "object" || Array.isArray(m) || m.jsonrpc !== "2.0") return false;
    if ("id" in m && typeof m.id !== "string" && typeof m.id !== "number") return false;
    if ("method" in m && typeof m.method !== "string") return false;
    if ("params" in m && (typeof m.params !== "object" || m.params === null)) return false;
    return "method" in m || "id" in m;
  }

  function hostContext() {
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    return {
      toolInfo: {id: view.callId, tool: view.toolDefinition || {name: view.tool, inputSchema: {type: "object"}}},
      theme: dark ? "dark" : "light",
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      containerDimensions: {width: frame.clientWidth, maxHeight: 4000},
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: "meworkctl view",
      platform: "web",
      deviceCapabilities: {touch: false, hover: true}
    };
  }

  function initializeResult(params) {
    var asked = params && params.protocolVersion;
    var known = ["2026-01-26", "2025-11-21"];
    return {
      protocolVersion: known.indexOf(asked) >= 0 ? asked : known[0],
      hostInfo: {name: "meworkctl view", version: "1"},
      hostCapabilities: {
        openLinks: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        message: {text: {}},
        updateModelContext: {text: {}, structuredContent: {}},
        sandbox: {permissions: view.permissions || {}, csp: view.csp || {}}
      },
      hostContext: hostContext()
    };
  }

  function relay(m) {
    post("/bridge", {method: m.method, params: m.params || {}}).then(function (answer) {
      if (answer.error) { log("← error " + m.method + ": " + answer.error.message); fail(m.id, answer.error.code, answer.error.message, answer.error.data); return; }
      log("← " + m.method);
      if (m.method === "ui/open-link") showLink(m.params.url);
      reply(m.id, m.method.indexOf("ui/") === 0 ? {} : answer.result);
    }, function () { fail(m.id, -32603, "the page's server is not reachable"); });
  }

  function onRequest(m) {
    log("→ " + m.method);
    switch (m.method) {
      case "ui/initialize": reply(m.id, initializeResult(m.params)); return;
      case "ping": reply(m.id, {}); return;
      case "ui/request-display-mode": reply(m.id, {mode: "inline"}); return;
      case "tools/call": case "resources/read": case "ui/message":
      case "ui/update-model-context": case "ui/open-link":
        relay(m); return;
      default: fail(m.id, -32601, "method not found: " + m.method);
    }
  }

  function onNotification(m) {
    if (m.method === "ui/notifications/initialized") {
      if (initialized) return;
      initialized = true;
      log("→ initialized");
      notify("ui/notifications/tool-input", view.toolInput);
      notify("ui/notifications/tool-result", view.toolResult);
      document.body.dataset.state = "shown";
      status("The view is shown with the call's result.");
    } else if (m.method === "ui/notifications/size-changed") {
      var height = m.params && m.params.height;
      if (typeof height === "number" && height > 0) frame.style.height = Math.min(Math.ceil(height), 10000) + "px";
    } else if (m.method === "notifications/message") {
      log("view log: " + JSON.stringify(m.params).slice(0, 200));
    }
  }

  function onMessage(event) {
    if (!frame || event.source !== frame.contentWindow || event.origin !== sandboxOrigin) return;
    var m = event.data;
    if (!wellFormed(m)) {
      log("malformed message refused");
      if (m && (typeof m.id === "string" || typeof m.id === "number")) fail(m.id, -32600, "invalid request");
      return;
    }
    if (m.method === "ui/notifications/sandbox-proxy-ready") {
      notify("ui/notifications/sandbox-resource-ready", {html: view.html, csp: view.csp || undefined, permissions: view.permissions || undefined});
      return;
    }
    if (m.method === undefined) {
      var done = waiting[m.id];
      if (done) { delete waiting[m.id]; done(m); }
      return;
    }
    if ("id" in m) onRequest(m); else onNotification(m);
  }

  function showLink(url) {
    var a = document.createElement("a");
    a.href = url; a.textContent = "The view asks to open " + url; a.rel = "noopener noreferrer"; a.target = "_blank";
    $("links").appendChild(a);
  }

  function teardown(reason) {
    if (closed || !frame) return Promise.resolve();
    closed = true;
    var id = "teardown-" + nextId++;
    var answered = new Promise(function (resolve) { waiting[id] = resolve; });
    if (initialized) toView({jsonrpc: "2.0", id: id, method: "ui/resource-teardown", params: {reason: reason}});
    var bounded = new Promise(function (resolve) { setTimeout(resolve, 3000); });
    return Promise.race([initialized ? answered : Promise.resolve(), bounded]).then(function () {
      frame.remove(); frame = null;
      document.body.dataset.state = "closed";
      status("View closed.");
    });
  }

  function showApproval(data) {
    var box = document.createElement("div");
    box.className = "approval"; box.id = "approval-" + data.approvalId;
    var text = document.createElement("span");
    text.textContent = "Allow " + data.server + " → " + data.tool + "? ";
    box.appendChild(text);
    ["allow", "deny"].forEach(function (decision) {
      var button = document.createElement("button");
      button.type = "button"; button.textContent = decision === "allow" ? "Allow" : "Deny";
      button.dataset.decision = decision;
      button.onclick = function () { post("/bridge", {method: "approve", params: {approvalId: data.approvalId, decision: decision}}); };
      box.appendChild(button);
    });
    $("approvals").appendChild(box);
  }

  function follow() {
    var source = new EventSource("/events?t=" + encodeURIComponent(token));
    source.onmessage = function (event) {
      var e = JSON.parse(event.data);
      if (e.topic === "approval.requested") showApproval(e.data);
      else { var box = $("approval-" + e.data.approvalId); if (box) box.remove(); }
    };
  }

  function permissionsAllow(permissions) {
    var names = {camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write"};
    return Object.keys(names).filter(function (k) { return permissions && permissions[k]; })
      .map(function (k) { return names[k] + " " + sandboxOrigin; }).join("; ");
  }

  fetch("/view.json?t=" + encodeURIComponent(token)).then(function (r) { return r.json(); }).then(function (v) {
    view = v; sandboxOrigin = v.sandboxOrigin;
    $("title").textContent = v.server + " · " + v.tool;
    $("meta").textContent = "call " + v.callId + " · " + v.resourceUri;
    (v.warnings || []).forEach(function (w) { var p = document.createElement("p"); p.className = "warning"; p.textContent = w; $("frame-box").before(p); });
    window.addEventListener("message", onMessage);
    frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
    var allow = permissionsAllow(v.permissions);
    if (allow) frame.setAttribute("allow", allow);
    frame.title = "MCP App view";
    if (v.prefersBorder !== false) $("frame-box").className = "border";
    frame.src = v.sandboxUrl;
    $("frame-box").appendChild(frame);
    follow();
  });
  $("close").onclick = function () { teardown("closed by the user"); };
  window.addEventListener("pagehide", function () { teardown("page closed"); });
})();
