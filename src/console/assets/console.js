// The console's one script, loaded from the same origin (the Content-Security-Policy allows no
// inline script). Signing in and out go through the API's own endpoints, so the session,
// its cookie, the login throttle and the audit trail are the API's.
"use strict";

async function postJson(path, body) {
  return fetch(path, {
    method: "POST",
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

setUpSignIn();
setUpSignOut();
