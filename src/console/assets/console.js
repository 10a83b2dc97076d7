// The console's one script, loaded from the same origin (the Content-Security-Policy allows no
// inline script). Signing in and out go through the API's own endpoints, so the session,
// its cookie, the login throttle and the audit trail are the API's.
"use strict";

async function postJson(path, body) {
  return sendJson("POST", path, body);
}

async function sendJson(method, path, body) {
  return fetch(path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
}

function setUpSignIn() {
  const form = document.getElementById("sign-in");
  if (!form) return;
  const error = document.getElementById("sign-in-error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    const data = new FormData(form);
    const answer = await postJson("/v1/auth/login", {
      username: data.get("username"),
      password: data.get("password"),
    });
    if (answer.ok) {
      window.location.assign("/console/");
      return;
    }
    const body = await answer.json().catch(() => ({}));
    error.textContent = body.message || "Signing in failed (" + answer.status + ").";
    error.hidden = false;
  });
}

function setUpSignOut() {
  const button = document.getElementById("sign-out");
  if (!button) return;
  button.addEventListener("click", async () => {
    await postJson("/v1/auth/logout");
    window.location.assign("/console/sign-in");
  });
}

// The duplicate triage (`/console/duplicates`): keys, and the merge and dismiss posted to the
// API. After either, the same position is shown again (the next group has moved into it) by
// replacing the page's main part, without a full reload.

function setStatus(text, failed) {
  const status = document.getElementById("status");
  if (!status) return;
  status.textContent = text;
  status.classList.toggle("failed", Boolean(failed));
}

// Reads `url` and puts its element `part` (the page's main part by default) in place of this
// page's: what the person typed or chose elsewhere on the page stays.
async function show(url, part = "main") {
  const answer = await fetch(url, { credentials: "same-origin" });
  const page = new DOMParser().parseFromString(await answer.text(), "text/html");
  const fresh = page.getElementById(part);
  const shown = document.getElementById(part);
  if (!answer.ok || !fresh || !shown) {
    window.location.assign(url);
    return;
  }
  shown.replaceWith(fresh);
  window.history.replaceState(null, "", url);
}

function triageModels() {
  const triage = document.getElementById("triage");
  return triage ? triage.dataset.models.split(",").filter(Boolean) : [];
}

function keeper() {
  return document.querySelector('input[name="keeper"]:checked');
}

async function settle(path, body, done, method) {
  const answer = await sendJson(method || "POST", path, body);
  const reply = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    setStatus(reply.message || "Refused (" + answer.status + ").", true);
    return;
  }
  await show(window.location.pathname + window.location.search);
  setStatus(done(reply), false);
}

async function merge() {
  const chosen = keeper();
  if (!chosen) return;
  const duplicates = triageModels().filter((id) => id !== chosen.value);
  const question =
    "Merge " + duplicates.length + " model(s) into " + chosen.dataset.name + "?\n\n" +
    "Their listings, references and missing pictures move to it, they are deleted, and their " +
    "slugs redirect to it from now on.";
  if (!window.confirm(question)) return;
  // Read before the merge: the page is replaced by the next group when it answers.
  const limit = Number(document.getElementById("triage").dataset.movedWithMerge);
  await settle("/v1/duplicate-models/merge", { keeperId: chosen.value, duplicateIds: duplicates },
    (reply) => "Merged " + reply.mergedModels + " model(s) into " + reply.keeper.name + " (" +
      reply.keeper.slug + "): " + reply.movedListings + " listing(s) " +
      // A merge relinks the first `limit` of its duplicates' listings in all and the server the
      // rest after it answers (D-231): those past the limit have not moved yet.
      (reply.movedListings > limit
        ? "move to it, the first " + limit + " with the merge and the rest in the background; " +
          "its listing count grows as they move."
        : "moved."));
}

async function dismiss() {
  if (!document.getElementById("dismiss")) return;
  await settle("/v1/duplicate-models/dismiss", { modelIds: triageModels() },
    (reply) => "Dismissed: " + reply.dismissedPairs + " pair(s) will not be offered again.");
}

function follow(id) {
  const link = document.getElementById(id);
  if (link) show(link.href);
}

// The reconciliation page: a group linked to the model chosen beside it.
async function linkGroup(button) {
  const group = button.closest("article.group");
  const chosen = group && group.querySelector('input[type="radio"]:checked');
  if (!chosen) return;
  await settle("/v1/reconciliation/link", { group: group.dataset.group, model: chosen.value },
    (reply) => "Linked " + reply.linkedListings.length + " listing(s) to " + reply.model.name +
      " (" + reply.model.slug + ").");
}

// Teaching the chosen model the group's reference: the model gains it (as sellers wrote it
// most) and the group is linked to it.
async function teachGroup(button) {
  const group = button.closest("article.group");
  const chosen = group && group.querySelector('input[type="radio"]:checked');
  if (!chosen) return;
  await settle("/v1/reconciliation/models/update", { group: group.dataset.group, model: chosen.value },
    (reply) => reply.model.name + " (" + reply.model.slug + ") now has the reference " +
      (reply.learnt.reference || reply.model.referenceNumber) + ": " + reply.linkedListings.length +
      " listing(s) linked, " + reply.matchedListings.length + " more matched.");
}

// The form that makes a model from a group: another brand brings its own series list, and the
// model is created through the API; the form then gives way to what was done.
async function brandChosen(select) {
  const form = select.form;
  const url = form.dataset.here + "&brand=" + encodeURIComponent(select.value);
  await show(url, "series-choice");
}

async function createModel(form) {
  const data = new FormData(form);
  const fields = {};
  for (const name of ["brand", "series", "name", "referenceNumber", "description"]) {
    const value = String(data.get(name) || "").trim();
    if (value) fields[name] = value;
  }
  const answer = await postJson("/v1/reconciliation/models", { group: form.dataset.group, fields });
  const reply = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    setStatus(reply.message || "Refused (" + answer.status + ").", true);
    return;
  }
  const learnt = reply.learnt.brandAlias
    ? " “" + reply.learnt.brandAlias + "” is now an alias of its brand." : "";
  setStatus("Created " + reply.model.name + " (" + reply.model.slug + "): " +
    reply.linkedListings.length + " listing(s) linked, " + reply.matchedListings.length +
    " more matched." + learnt, false);
  form.hidden = true;
}

// The users page: a colleague added, a role changed or access revoked through the API. The
// password typed is sent once and the form emptied; no answer carries it back.
async function addUser(form) {
  const data = new FormData(form);
  const body = { name: data.get("name"), role: data.get("role"), password: data.get("password") };
  form.querySelector("#new-password").value = "";
  const answer = await postJson("/v1/admin/users", body);
  const reply = await answer.json().catch(() => ({}));
  if (answer.status !== 201) {
    setStatus(reply.message || "Refused (" + answer.status + ").", true);
    return;
  }
  form.reset();
  await show(window.location.pathname);
  setStatus("Added " + reply.name + " (" + reply.role + ").", false);
}

function userOf(button) {
  return button.closest("tr").dataset.user;
}

async function setRole(button) {
  const name = userOf(button);
  const role = button.closest("tr").querySelector("select.user-role").value;
  await settle("/v1/admin/users/" + encodeURIComponent(name) + "/role", { role },
    (reply) => reply.name + " is " + reply.role + " now; their sessions ended.", "PUT");
}

async function removeUser(button) {
  const name = userOf(button);
  if (!window.confirm("Revoke " + name + "’s access? Their account is removed and their " +
    "sessions end at once.")) return;
  await settle("/v1/admin/users/" + encodeURIComponent(name), undefined,
    (reply) => reply.name + " is removed; " + reply.sessionsEnded + " session(s) ended.", "DELETE");
}

// The picture review: a candidate made the front picture, the current one kept, or a picture
// set by its address, each through the API.
async function selectCandidate() {
  const chosen = document.querySelector('input[name="candidate"]:checked');
  if (!chosen || !document.getElementById("select-candidate")) return;
  await settle("/v1/picture-review/candidates/" + encodeURIComponent(chosen.value) + "/select",
    undefined, () => "The candidate is the front picture now.");
}

async function keepPicture() {
  const button = document.getElementById("keep-picture");
  if (!button) return;
  await settle("/v1/picture-review/pictures/" + encodeURIComponent(button.dataset.picture) + "/keep",
    undefined, () => "The current picture is kept.");
}

async function setFrontByUrl(form) {
  const model = document.getElementById("review").dataset.model;
  const body = {
    url: form.querySelector("#front-url").value,
    protected: form.querySelector("#front-protected").checked,
  };
  await settle("/v1/picture-review/models/" + encodeURIComponent(model) + "/front-picture", body,
    () => "The front picture is set; it is fetched and cropped in the background.", "PUT");
}

// The jobs page: a job started or a snapshot uploaded through the API, then the list of jobs
// read again every second while a job in it is queued or running (the upload form, the status
// line and the rest of the page stay as they are).
let refresh = null;

function keepJobsLive() {
  window.clearTimeout(refresh);
  const jobs = document.getElementById("jobs");
  if (jobs && jobs.dataset.live === "true") {
    refresh = window.setTimeout(async () => {
      await show(window.location.pathname + window.location.search, "job-list");
      keepJobsLive();
    }, 1000);
  }
}

async function jobStarted(answer, reply) {
  if (answer.status !== 202) {
    setStatus(reply.message || "Refused (" + answer.status + ").", true);
    return;
  }
  await show(window.location.pathname + window.location.search, "job-list");
  setStatus("Job " + reply.id + " (" + reply.kind + ") was submitted: the list below follows it.",
    false);
  keepJobsLive();
}

async function startJob(button) {
  const answer = await postJson(button.dataset.path);
  await jobStarted(answer, await answer.json().catch(() => ({})));
}

function uploadSnapshot(form) {
  const file = form.querySelector("#snapshot-file").files[0];
  if (!file) return;
  const provider = encodeURIComponent(form.querySelector("#provider").value);
  const mass = form.querySelector("#allow-mass-delist").checked ? "?allowMassDelist=true" : "";
  const bar = form.querySelector("#upload-progress");
  const request = new XMLHttpRequest();
  request.open("POST", "/v1/admin/providers/" + provider + "/snapshot" + mass);
  request.setRequestHeader("content-type", "application/x-ndjson");
  request.upload.addEventListener("progress", (event) => {
    if (!event.lengthComputable) return;
    bar.hidden = false;
    bar.value = Math.round((100 * event.loaded) / event.total);
    bar.textContent = bar.value + " %";
  });
  request.addEventListener("load", () => {
    if (request.status === 202) {
      form.reset();
      bar.hidden = true;
    }
    let reply = {};
    try { reply = JSON.parse(request.responseText); } catch (_) { /* not JSON */ }
    jobStarted({ status: request.status }, reply);
  });
  request.addEventListener("error", () => setStatus("The upload failed.", true));
  request.send(file);
}

function setUpTriage() {
  document.addEventListener("click", (event) => {
    const target = event.target;
    if (target.id === "merge") merge();
    if (target.id === "dismiss") dismiss();
    if (target.id === "select-candidate") selectCandidate();
    if (target.id === "keep-picture") keepPicture();
    if (target.classList.contains("link-group")) linkGroup(target);
    if (target.classList.contains("teach-group")) teachGroup(target);
    if (target.classList.contains("set-role")) setRole(target);
    if (target.classList.contains("remove-user")) removeUser(target);
    if (target.classList.contains("start-job")) startJob(target);
    if ((target.id === "next" || target.id === "previous") && target.href) {
      event.preventDefault();
      show(target.href);
    }
  });
  document.addEventListener("keydown", (event) => {
    if (!document.getElementById("keys")) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input:not([type=radio]), select, textarea")) return;
    const key = event.key;
    if (key >= "1" && key <= "6") {
      const choices = 'input[name="keeper"], input[name="candidate"]';
      const choice = document.querySelectorAll(choices)[Number(key) - 1];
      if (choice) choice.checked = true;
    } else if (key === "m") merge();
    else if (key === "d") dismiss();
    else if (key === "s") selectCandidate();
    else if (key === "x") keepPicture();
    else if (key === "j") follow("next");
    else if (key === "k") follow("previous");
    else if (key === "?") {
      const keys = document.getElementById("keys");
      keys.open = !keys.open;
    } else return;
    event.preventDefault();
  });
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.id === "snapshot") {
    event.preventDefault();
    uploadSnapshot(form);
  } else if (form.id === "front-by-url") {
    event.preventDefault();
    setFrontByUrl(form);
  } else if (form.id === "new-model") {
    event.preventDefault();
    createModel(form);
  } else if (form.id === "add-user") {
    event.preventDefault();
    addUser(form);
  }
});

document.addEventListener("change", (event) => {
  if (event.target.id === "new-brand") brandChosen(event.target);
});

setUpSignIn();
setUpSignOut();
setUpTriage();
keepJobsLive();
