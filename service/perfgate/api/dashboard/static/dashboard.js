// Filter forms apply as soon as a choice changes (a plain submit button stands in without JS).
"use strict";
document.querySelectorAll("form.auto-submit select").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
