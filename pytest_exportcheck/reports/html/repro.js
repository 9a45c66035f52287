// An item's plain-torch reproduction (--exportcheck-repro) in its details: what its run
// said (in the reports' words, data.py's repro_said), the script's path, and a button that
// copies the script, whose text the page holds (data.scripts, by path; files.py). Shares
// page.js's names (el, data); textContent only, as there: a script is user-derived text.
function reproductionOf(item) {
  const box = el("div", { className: "repro" },
    el("span", { className: item.repro_contradicts ? "repro-said contradicts" : "repro-said" },
      item.repro_said));
  if (!item.repro) return box;
  box.append(el("div", {}, el("code", { className: "repro-path" }, item.repro)));
  const script = data.scripts[item.repro];
  if (!script || typeof script.text !== "string") {
    box.append(el("p", { className: "hint" }, "The script is not in this page" +
      (script && script.missing ? ": " + script.missing : "") + "."));
    return box;
  }
  const button = el("button", { type: "button", className: "copy" }, "copy the script");
  button.addEventListener("click", () => copyScript(script.text, button));
  const lines = script.text.split("\n").length - 1;
  box.append(el("div", {}, button),
    el("details", {}, el("summary", {}, "the script (" + lines + " lines)"),
      el("pre", { className: "script" }, script.text)));
  return box;
}

function copyScript(text, button) {
  const said = (copied) => {
    button.textContent = copied ? "copied" : "not copied: select the script below";
    setTimeout(() => { button.textContent = "copy the script"; }, 2500);
  };
  // The clipboard API needs a secure context (a file: page is one in Chromium, not
  // everywhere): else a hidden textarea, selected and copied, as browsers long allowed.
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => said(true), () => said(copyBySelection(text)));
  } else {
    said(copyBySelection(text));
  }
}

function copyBySelection(text) {
  const area = el("textarea", { value: text, readOnly: true, className: "offscreen" });
  document.body.append(area);
  area.select();
  let copied = false;
  try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
  area.remove();
  return copied;
}
