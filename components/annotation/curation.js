// KoED Studio's curation view: one dialogue with every annotator's spans in its text,
// stacked per annotator under each turn that has any, agreements marked (a span every
// annotator marked alike), and, for the reviewer, the final answer's row. A click on an
// annotator's span puts it in the final answer, a click on the final row's span takes it
// out: the server checks the key against the spans it pooled. Text is placed with
// textContent only.
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  parentElement.querySelectorAll(".koed-curation").forEach((old) => old.remove());
  const root = document.createElement("div");
  root.className = "koed-curation";
  parentElement.appendChild(root);
  const T = data.texts;
  let sent = 0;
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const legend = el("div", "legend");
  for (const t of data.types) {
    const item = el("span", "key");
    const swatch = el("span", "swatch");
    swatch.style.background = t.color;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(t.short));
    item.title = t.label;
    legend.appendChild(item);
  }
  legend.appendChild(el("span", "agreed-key", T.agreed));
  if (data.clickable) legend.appendChild(el("span", "how", T.how));
  root.appendChild(legend);
  const fill = (cell, text, marks) => {
    const chars = Array.from(text);
    let at = 0;
    for (const m of marks) {
      if (m.start < at) continue;
      cell.appendChild(document.createTextNode(chars.slice(at, m.start).join("")));
      const mark = el("mark", m.cls, chars.slice(m.start, m.end).join(""));
      mark.title = m.title;
      if (m.color) mark.style.background = m.color;
      mark.dataset.key = m.key;
      if (data.clickable) {
        mark.setAttribute("role", "button");
        mark.addEventListener("click", () => {
          sent += 1;
          setTriggerValue("toggle", { key: m.key, final: m.cls.includes("final"), n: sent });
        });
      }
      cell.appendChild(mark);
      at = m.end;
    }
    cell.appendChild(document.createTextNode(chars.slice(at).join("")));
  };
  const table = document.createElement("table");
  const head = document.createElement("tr");
  for (const label of ["", "", ...data.headers]) head.appendChild(el("th", "", label));
  table.appendChild(head);
  for (const turn of data.turns) {
    const lines = turn.lines.length ? turn.lines : [{ label: "", cls: "", marks: { ko: [], en: [] } }];
    lines.forEach((line, i) => {
      const row = document.createElement("tr");
      row.className = `${line.cls} ${i === lines.length - 1 ? "last" : ""}`;
      if (i === 0) {
        const who = el("td", "who", turn.who);
        who.rowSpan = lines.length;
        row.appendChild(who);
      }
      row.appendChild(el("td", "line", line.label));
      for (const lang of ["ko", "en"]) {
        const td = el("td", lang);
        const txt = el("div", "txt");
        txt.dataset.lang = lang;
        txt.dataset.position = String(turn.position);
        fill(txt, turn[lang], line.marks[lang]);
        td.appendChild(txt);
        row.appendChild(td);
      }
      table.appendChild(row);
    });
  }
  root.appendChild(table);
}
