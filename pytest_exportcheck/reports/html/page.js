// The page's grid, items table, filters and details, drawn from the JSON in
// #exportcheck-data (reports/html/data.py); views.js draws the versions and comparison
// views. page.html.j2 puts both into one function and calls start() after them.
// Data reaches the DOM through textContent and createElement only (el() below), never
// innerHTML: a failure message is arbitrary text, and the page must not run it.
const data = JSON.parse(document.getElementById("exportcheck-data").textContent);
const items = data.items;
const grid = data.matrix;
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value == null) continue;
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child != null) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// An item's color: its outcome, or "gaps" for a pass whose check verified less (gaps.py).
const state = (item) =>
  item.outcome === "passed" && item.gaps && item.gaps.length ? "gaps" : item.outcome;
const symbol = (item) =>
  data.symbols[state(item) === "gaps" ? "passed with gaps" : item.outcome] || "?";
// A cell of several items shows the one that needs attention first.
const RANK = ["failed", "error", "xpassed", "xfailed", "gaps", "passed", "skipped",
  "not_applicable"];
const worst = (list) =>
  list.reduce((a, b) => (RANK.indexOf(state(b)) < RANK.indexOf(state(a)) ? b : a));
const label = (outcome) => outcome.replace("_", " ");
const seconds = (value) => (typeof value === "number" ? value.toFixed(3) : "");
const number = (value) => {
  if (typeof value !== "number") return value || "";  // "nan", "inf": strings (data.finite)
  const size = Math.abs(value);
  return size === 0 || (size >= 0.01 && size < 1e4) ? String(+value.toPrecision(3))
    : value.toExponential(2);
};

// -- filters ---------------------------------------------------------------------------
const FIELDS = ["check", "capture", "device", "stage"];
const shown = new Set(data.outcomes);
const haystack = items.map((item) =>
  [item.nodeid, item.message, item.reason, item.where, item.text, item.tolerance,
    item.repro, item.repro_said]
    .filter(Boolean).join("\n").toLowerCase());

function buildFilters() {
  const box = $("filter-outcome");
  for (const outcome of data.outcomes) {
    const count = data.totals[outcome] || 0;
    if (!count) continue;
    const input = el("input", { type: "checkbox", checked: true, value: outcome });
    input.addEventListener("change", () => {
      if (input.checked) shown.add(outcome); else shown.delete(outcome);
      applyFilters();
    });
    box.append(el("label", { className: "pill o-" + outcome }, input,
      " " + label(outcome) + " " + count));
  }
  for (const field of FIELDS) {
    const values = [...new Set(items.map((item) => item[field]).filter(Boolean))].sort();
    const select = $("filter-" + field);
    for (const value of values) select.append(el("option", { value: value }, value));
    select.addEventListener("change", applyFilters);
  }
  let timer = null;
  $("filter-text").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(applyFilters, 120);  // typing through 5,000 items stays smooth
  });
}

function currentFilter() {
  const chosen = {};
  for (const field of FIELDS) chosen[field] = $("filter-" + field).value;
  const text = $("filter-text").value.trim().toLowerCase();
  return items.map((item, i) =>
    shown.has(item.outcome) &&
    FIELDS.every((field) => !chosen[field] || item[field] === chosen[field]) &&
    (!text || haystack[i].includes(text)));
}

function applyFilters() {
  const match = currentFilter();
  filterMatrix(match);
  filterTable(match);
  const count = match.filter(Boolean).length;
  $("filter-count").textContent = "showing " + count + " of " + items.length + " items";
}

// -- the matrix ------------------------------------------------------------------------
const cells = grid.rows.map(() => new Map());  // row → column → item indices
grid.cells.forEach(([row, column], i) => {
  const list = cells[row].get(column) || [];
  list.push(i);
  cells[row].set(column, list);
});
const matrixRows = [];  // {tr, file, row, tds: Map column → td, spans: [{td, columns}]}
const columnHeads = [];
const groupHeads = [];  // {th, columns}
const fileRows = new Map();

function buildMatrix() {
  const table = $("matrix");
  const legend = Object.entries(data.symbols).map(([name, sym]) => sym + " " + label(name));
  const letters = grid.columns.map((c) => c.letter + " " + c.check);
  $("legend").textContent = "legend: " + legend.join("  ") + " — checks: " +
    [...new Set(letters)].join("  ") + " — click a cell for its details";
  const head1 = el("tr", {}, el("th", { rowSpan: 2, className: "case" }, "case"));
  const head2 = el("tr");
  if (grid.per_device) head1.append(el("th", { rowSpan: 2 }, "device"));
  grid.columns.forEach((column, c) => {
    const last = groupHeads[groupHeads.length - 1];
    if (last && last.capture === column.capture) last.columns.push(c);
    else {
      // consistency compares the paths: its column has no path above it (as in the text)
      const th = el("th", { className: "group", title: column.capture || "across capture paths" },
        column.capture);
      groupHeads.push({ th: th, capture: column.capture, columns: [c] });
      head1.append(th);
    }
    const th = el("th", { className: "letter", title: column.check + " · " +
      (column.capture || "across capture paths") }, column.letter);
    columnHeads.push(th);
    head2.append(th);
  });
  for (const group of groupHeads) group.th.colSpan = group.columns.length;
  const body = el("tbody");
  const width = grid.columns.length + (grid.per_device ? 2 : 1);
  grid.rows.forEach((row, r) => {
    if (!fileRows.has(row.file)) {
      const tr = el("tr", { className: "file" },
        el("th", { colSpan: width }, el("span", {}, row.file)));
      fileRows.set(row.file, tr);
      body.append(tr);
    }
    const where = row.file + (row.line ? ":" + row.line : "");
    const tr = el("tr", { className: "case-row" },
      el("th", { className: "case", title: where }, row.case));
    const entry = { tr: tr, file: row.file, row: r, tds: new Map(), spans: [] };
    if (row.broken !== null) {
      const td = el("td", { className: "c broken o-error", colSpan: width - 1,
        dataset: { row: r, column: -1 } }, "broken: " + row.broken);
      entry.tds.set(-1, td);
      tr.append(td);
    } else {
      if (grid.per_device) tr.append(el("td", { className: "device" }, row.device));
      grid.columns.forEach((column, c) => {
        if (column.lowered && !row.lowers) {
          // A case that lowers nothing: a capture's run of target columns is one blank.
          const span = entry.spans[entry.spans.length - 1];
          if (span && span.columns.at(-1) === c - 1 && grid.columns[c - 1].capture ===
              column.capture) {
            span.columns.push(c);
            span.td.colSpan = span.visible = span.columns.length;
          } else {
            const td = el("td", { className: "none", title: "lowers nothing in this run" });
            entry.spans.push({ td: td, columns: [c], visible: 1 });
            tr.append(td);
          }
          return;
        }
        const list = cells[r].get(c), top = list && worst(list.map((i) => items[i]));
        const at = { row: r, column: c };
        // plain torch contradicts a verdict here (repro.js): the cell is ringed
        const loud = list && list.some((i) => items[i].repro_contradicts) ? " contradicts" : "";
        const td = top ? el("td", { className: "c o-" + state(top) + loud, dataset: at },
          symbol(top)) : el("td", { className: "c empty" });
        entry.tds.set(c, td);
        tr.append(td);
      });
    }
    matrixRows.push(entry);
    body.append(tr);
  });
  table.append(el("thead", {}, head1, head2), body);
  table.addEventListener("click", (event) => {
    const td = event.target.closest("td.c[data-row]");
    if (td) showDetails(cells[+td.dataset.row].get(+td.dataset.column).map((i) => items[i]));
  });
}

function filterMatrix(match) {
  const columnUsed = grid.columns.map(() => false);
  const fileUsed = new Set();
  // Only what changes is touched: each write of a class or attribute of 20,000 cells
  // costs the browser a style pass over them, changed or not.
  for (const entry of matrixRows) {
    let any = false;
    for (const [column, list] of cells[entry.row]) {
      const hit = list.some((i) => match[i]);
      const td = entry.tds.get(column);
      if (!!td.dim === hit) { td.dim = !hit; td.classList.toggle("dim", !hit); }
      if (hit) { any = true; if (column >= 0) columnUsed[column] = true; }
    }
    if (entry.tr.hidden === any) entry.tr.hidden = !any;
    if (any) fileUsed.add(entry.file);
  }
  // A column no shown item has (filtered to one check) goes, so the grid stays narrow.
  columnHeads.forEach((th, c) => {
    if (th.hidden === columnUsed[c]) {
      th.hidden = !columnUsed[c];
      for (const entry of matrixRows) {
        const td = entry.tds.get(c);
        if (td) td.hidden = !columnUsed[c];
      }
    }
  });
  for (const entry of matrixRows) {
    for (const span of entry.spans) {
      const visible = span.columns.filter((c) => columnUsed[c]).length;
      if (span.visible !== visible) {
        span.visible = visible;
        span.td.hidden = !visible;
        span.td.colSpan = Math.max(visible, 1);
      }
    }
  }
  for (const group of groupHeads) {
    const visible = group.columns.filter((c) => columnUsed[c]).length;
    group.th.hidden = !visible;
    group.th.colSpan = Math.max(visible, 1);
  }
  for (const [file, tr] of fileRows) tr.hidden = !fileUsed.has(file);
}

// -- the items table ---------------------------------------------------------------------
// Shows the first PAGE matching rows of the sorted order, more on request: laying out
// 5,000 table rows takes the browser seconds, sorting them in place longer still.
const PAGE = 500;
const COLUMNS = [
  ["outcome", (it) => it.outcome], ["case", (it) => it.case], ["capture", (it) => it.capture],
  ["check", (it) => it.check], ["device", (it) => it.device], ["stage", (it) => it.stage],
  ["duration s", (it) => it.duration, seconds], ["capture s", (it) => it.capture_seconds, seconds],
  ["max abs err", (it) => it.max_abs_err, number], ["headline", (it) => it.message],
];
const table = { order: items.map((_, i) => i), match: [], limit: PAGE, sorted: -1,
  descending: false, rows: new Map(), body: el("tbody"), more: el("button", { type: "button" }) };

function rowOf(i) {
  if (table.rows.has(i)) return table.rows.get(i);
  const item = items[i];
  const tr = el("tr", { dataset: { item: i } }, ...COLUMNS.map(([name, get, show]) => {
    const value = show ? show(get(item)) : get(item);
    return name === "outcome" ? el("td", { className: "o-" + state(item) }, label(value))
      : el("td", { title: name === "headline" ? value : null }, value);
  }));
  table.rows.set(i, tr);
  return tr;
}

function buildTable() {
  const head = el("tr", {}, ...COLUMNS.map(([name], c) =>
    el("th", { className: "sortable", dataset: { column: c } }, name)));
  $("items").append(el("thead", {}, head), table.body);
  $("items").after(table.more);
  head.addEventListener("click", (event) => {
    const th = event.target.closest("th");
    if (th) sortTable(+th.dataset.column, th);
  });
  table.body.addEventListener("click", (event) => {
    const tr = event.target.closest("tr[data-item]");
    if (tr) showDetails([items[+tr.dataset.item]]);
  });
  table.more.addEventListener("click", () => { table.limit += PAGE; drawTable(); });
}

function drawTable() {
  const shownRows = table.order.filter((i) => table.match[i]);
  table.body.replaceChildren(...shownRows.slice(0, table.limit).map(rowOf));
  const left = shownRows.length - Math.min(shownRows.length, table.limit);
  table.more.hidden = !left;
  table.more.textContent = "show " + Math.min(left, PAGE) + " more (" + left + " not shown)";
}

function sortTable(c, th) {
  const get = COLUMNS[c][1];
  const numeric = items.some((item) => typeof get(item) === "number");
  // Numbers sort largest first on the first click: the slow cases stand out.
  table.descending = table.sorted === c ? !table.descending : numeric;
  table.sorted = c;
  const sign = table.descending ? -1 : 1;
  const keys = items.map((item) => { const v = get(item); return v === null ? undefined : v; });
  table.order.sort((a, b) => {
    const x = keys[a], y = keys[b];
    if (x === y) return a - b;
    if (x === undefined) return 1;  // missing values last, either way
    if (y === undefined) return -1;
    return (numeric ? Number(x) - Number(y) : String(x).localeCompare(String(y))) * sign || a - b;
  });
  for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", table.descending ? "descending" : "ascending");
  table.limit = PAGE;
  drawTable();
}

function filterTable(match) {
  table.match = match;
  table.limit = PAGE;
  drawTable();
}

// -- details ---------------------------------------------------------------------------
function showDetails(list) {
  const body = $("details-body");
  body.replaceChildren(...list.map(detailsOf));
  $("details").hidden = false;
}

function detailsOf(item) {
  const dl = el("dl");
  const add = (name, value, pre) => {
    if (value === null || value === undefined || value === "") return;
    dl.append(el("dt", {}, name), el("dd", {}, pre ? el("pre", {}, value) : value));
  };
  add("outcome", el("span", { className: "pill o-" + state(item) }, label(state(item))));
  add("reproduction", item.repro_said ? reproductionOf(item) : null);
  add("file", item.file + (item.line ? ":" + item.line : ""));
  add("capture · check · device", [item.capture, item.check, item.device]
    .filter(Boolean).join(" · "));
  add("stage", item.stage);
  add("where", item.where);
  // Only where the check compared values (compared > 0); a report that does not say
  // (compared null: older, or a fixture call's) shows what it holds.
  if (item.compared !== 0) {
    add("compared", item.compared
      ? item.compared + (item.compared === 1 ? " tensor pair" : " tensor pairs") : null);
    add("tolerance", item.tolerance);
    add("max abs err", typeof item.max_abs_err === "number" && item.max_abs_err !== 0
      ? item.max_abs_err.toPrecision(4) : item.max_abs_err);
  }
  add("xfail reason", item.reason);
  add("xfail entry", item.xfail_line ? item.file + ":" + item.xfail_line : null);
  add("duration", item.duration === null ? null : seconds(item.duration) + " s" +
    (typeof item.capture_seconds === "number"
      ? " (capture " + seconds(item.capture_seconds) + " s, shared)" : ""));
  add("recorded against", item.recorded_against && "torch " + item.recorded_against);
  add("differs from the recording", (item.drift || []).map((d) => d.join(": ")).join("\n"), true);
  add("gaps", (item.gaps || []).map((g) => g.what + " (" + g.why + ")").join("\n"), true);
  // The failure text begins with the headline as a rule: then it stands for both.
  if (!item.text || !item.message || !item.text.startsWith(item.message)) {
    add(item.text ? "headline" : "message", item.message, true);
  }
  add("failure", item.text, true);
  add("observation", item.observation && JSON.stringify(item.observation, null, 1), true);
  return el("article", {}, el("h2", {}, item.nodeid), dl);
}

// -- views -----------------------------------------------------------------------------
function showView(name) {
  if (!$("view-" + name)) name = "matrix";
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.view === name);
  }
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  $("filters").hidden = name !== "matrix" && name !== "items";
  // "#/items", not "#items": a fragment naming an element would scroll the page to it.
  history.replaceState(null, "", "#/" + name);
}

function start() {
  buildFilters();
  buildMatrix();
  buildTable();
  buildVersions();
  buildComparison();
  applyFilters();
  $("tabs").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-view]");
    if (button) showView(button.dataset.view);
  });
  $("details-close").addEventListener("click", () => { $("details").hidden = true; });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") $("details").hidden = true;
  });
  showView(location.hash.replace(/^#\/?/, "") || "matrix");
  document.body.dataset.ready = "true";  // for tests and screenshots: the views are drawn
}
