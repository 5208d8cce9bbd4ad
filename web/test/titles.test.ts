// A run's title from its first comment of words: not a file's encoding line, nor a notebook's
// cell marks (every file nbconvert writes starts `# coding: utf-8`, `# In[1]:`, and was titled
// "coding: utf-8"). The server's title_for reads comments the same way (server/library.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { commentTitle } from "../src/trace-model";

test("a comment of words is a title; an encoding line, a cell mark, a rule or code is not", () => {
  assert.equal(commentTitle("# Fit a cubic"), "Fit a cubic");
  assert.equal(commentTitle("  ## Fit a cubic  "), "Fit a cubic");
  assert.equal(commentTitle("# %% Train the model"), "Train the model");
  assert.equal(commentTitle("# %% [markdown] Notes"), "Notes");
  assert.equal(commentTitle("# 损失 curve"), "损失 curve");
  for (const line of ["# coding: utf-8", "# -*- coding: utf-8 -*-", "# vim: set fileencoding=utf-8 :", "#!/usr/bin/env python", "# %%", "# In[1]:", "# In[ ]:", "# -----", "x = 1", ""]) {
    assert.equal(commentTitle(line), null, line);
  }
  assert.equal(commentTitle(`# ${"a".repeat(100)}`), "a".repeat(80));
});
