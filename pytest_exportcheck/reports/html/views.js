// The versions and comparison views (page.js draws the rest; names are shared: both
// files run inside one function, page.html.j2's). textContent only, as in page.js.
function simpleTable(headings, rows) {
  return el("table", { className: "list" },
    el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}

function buildVersions() {
  const box = $("versions");
  const view = data.versions;
  if (!view) {
    box.append(el("p", {}, "Not read: this page was made without the case files' recordings."));
    return;
  }
  if (view.error) box.append(el("p", { className: "o-error" }, view.error));
  if (!view.steps.length) {
    box.append(el("p", {}, view.recordings.length
      ? "The recordings hold fewer than two torch minors: nothing to compare."
      : "No *.recorded.json beside the case files of this report."));
    return;
  }
  const rows = [];
  for (const step of view.steps) {
    const name = step.before + " → " + step.after;
    if (!step.groups.length) rows.push([name, "nothing (" + step.compared + " compared)", 0, ""]);
    for (const g of step.groups) rows.push([name, g.kind, g.items, g.example]);
  }
  box.append(simpleTable(["torch", "what changes", "items", "example"], rows),
    el("p", { className: "hint" }, "from " + view.recordings.join(", ")));
}

const KINDS = [["regressions", "regressions"], ["fixes", "fixes"],
  ["failing_differently", "failing differently"], ["other", "other outcome changes"],
  ["observations", "observations changed"], ["gaps", "gaps changed"],
  ["new", "new items"], ["removed", "removed items"]];

function buildComparison() {
  const box = $("comparison");
  const summary = data.comparison;
  if (!box || !summary) return;
  const byId = new Map(items.map((item) => [item.nodeid, item]));
  for (const [key, heading] of KINDS) {
    const ids = summary[key] || [];
    if (!ids.length) continue;
    const rows = ids.map((id) => {
      const item = byId.get(id);
      const link = item ? el("a", { href: "#comparison", className: "item" }, id) : id;
      if (item) link.addEventListener("click", (e) => { e.preventDefault(); showDetails([item]); });
      const was = (summary.was || {})[id];
      return [link, was ? el("span", { className: "pill o-" + was }, label(was)) : "",
        item ? el("span", { className: "pill o-" + state(item) },
          label(state(item))) : "not in this run", item ? item.message || "" : ""];
    });
    box.append(el("h3", { className: key === "regressions" ? "o-failed" : "" },
      ids.length + " " + heading), simpleTable(["item", "was", "now", "headline"], rows));
  }
  const drift = summary.observations_by_kind || [];
  if (drift.length) {
    box.append(el("h3", {}, "observations changed, by kind"), simpleTable(
      ["what changes", "items", "example"], drift.map((g) => [g.kind, g.items, g.example])));
  }
}
