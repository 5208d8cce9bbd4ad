// The local rules of the ops that pick, reorder, place, pad or resample elements rather than
// compute new ones (sort, topk, median, the triangles and diagonals, roll, masked_select,
// index_select, take, padding, pixel shuffle, F.unfold / F.fold, upsampling, adaptive and
// 3-D pooling), and of the running reductions (cumprod, cummax, logcumsumexp). Each says
// where an element's gradient goes back to, in words. Read by rules.ts.
import { type Ctx, perInput, type Rule, rule, said, savedDim, x } from "./rule-context";

/** ` along dim 1` when the node saved its dim, else "". */
function alongDim(c: Ctx): string {
  const dim = savedDim(c);
  return dim !== undefined ? ` along dim ${dim}` : "";
}

/** A rule whose summary names the input: `summary(x)`, and whose every edge reads `sym`. */
function about(summary: (name: string, c: Ctx) => string, sym: string): Rule {
  return { summary: (c) => summary(x(c), c), slots: () => ({ sym }) };
}

const TO_INDEX = "grad to the position each value came from (the index it returned), 0 elsewhere";
const NEAREST = about((v) => `out = ${v} enlarged, each element copied (nearest)`, "the grads of the copies summed into the element they copied");
const INTERPOLATED = about(
  (v) => `out = ${v} resized, each output a weighted mix of its nearest inputs (linear interpolation)`,
  "each output's grad spread back to the inputs it mixed, with the same weights",
);
const ADAPTIVE_AVG = about((v) => `out = the mean of each window ${v} is cut into for the output size`, "grad spread evenly over each window");
const ADAPTIVE_MAX = about((v) => `out = the largest element of each window ${v} is cut into for the output size`, "grad routed to each window's maximum, 0 elsewhere");
const REFLECTED = about((v) => `out = ${v} padded with its own mirror image at the edges`, "grad with each padded element's grad added onto the element it mirrors");
const REPLICATED = about((v) => `out = ${v} padded by repeating its edge elements`, "grad with each padded element's grad added onto the edge element it repeats");

export const SHAPE_RULES: Record<string, Rule> = {
  Sort: about((v, c) => `out = ${v} sorted${alongDim(c)}`, "each grad sent back to where its element came from (the sort's indices)"),
  Topk: about((v, c) => `out = the k largest (or smallest) of ${v}${alongDim(c)}`, "grad to the positions the k elements came from, 0 elsewhere"),
  Kthvalue: about((v, c) => `out = the k-th smallest of ${v}${alongDim(c)}`, TO_INDEX),
  // median() of a whole tensor shares its gradient among the elements equal to the median;
  // median(dim=…) sends it to the index it returned
  Median: {
    summary: (c) => `out = the median of ${x(c)}${alongDim(c)} (of an even count, the lower of the two middle elements)`,
    slots: (c) => ({ sym: c.saved("indices") ? TO_INDEX : "grad shared evenly among the elements equal to the median, 0 elsewhere" }),
  },
  Cummax: about((v, c) => `out = the running maximum of ${v}${alongDim(c)}`, "each element gets the grads of the positions where it was the running maximum"),
  Cummin: about((v, c) => `out = the running minimum of ${v}${alongDim(c)}`, "each element gets the grads of the positions where it was the running minimum"),
  Cumprod: about(
    (v, c) => `out = cumprod(${v}${alongDim(c) ? `, dim=${savedDim(c)}` : ""}) · each element the product of those up to it`,
    "element i gets Σ over j ≥ i of grad_j · out_j / x_i (worked out without the division where x has zeros)",
  ),
  Logcumsumexp: about((v, c) => `out_j = log Σ_{i ≤ j} e^${v}_i${alongDim(c)}`, "element i gets Σ over j ≥ i of grad_j · e^(x_i − out_j)"),
  Trace: about((v) => `out = the sum of ${v}'s diagonal`, "grad on the diagonal, 0 elsewhere"),
  Diagonal: about((v, c) => `out = ${v}'s diagonal (offset ${said(c, "offset", "0")})`, "grad put back on that diagonal, 0 elsewhere"),
  DiagEmbed: about((v) => `out = a matrix with ${v} on its diagonal (torch.diag of a vector)`, "the diagonal of grad"),
  Tril: about((v, c) => `out = ${v} with every element above diagonal ${said(c, "diagonal", "0")} set to 0`, "grad on and below that diagonal, 0 above it"),
  Triu: about((v, c) => `out = ${v} with every element below diagonal ${said(c, "diagonal", "0")} set to 0`, "grad on and above that diagonal, 0 below it"),
  Roll: about((v, c) => `out = ${v} rolled by ${said(c, "shifts", "shifts")}`, "grad rolled back the other way"),
  Unfold: about(
    (v, c) => `out = the windows of ${v} of size ${said(c, "size", "k")}, step ${said(c, "step", "s")}, along dim ${said(c, "dimension", "d")}`,
    "each window's grad added back onto the elements it covered (where windows overlap, their grads add)",
  ),
  MaskedSelect: about((v) => `out = the elements of ${v} where mask holds, in a 1-D tensor`, "grad put back at those positions, 0 elsewhere"),
  MaskedScatter: perInput(
    "out = x with the positions where mask holds filled, in order, from source",
    "grad where mask fails (the elements x kept), 0 where it holds",
    "the grads at the filled positions, in order (0 for source's elements left unused)",
  ),
  IndexSelect: about((v, c) => `out = the slices of ${v} at index${alongDim(c)}`, "grad's slices added back into the slices they came from (an index listed twice gets both), 0 elsewhere"),
  IndexFill: perInput("out = x with its slices at index filled with a value", "grad with the filled slices set to 0", "Σ grad over the filled slices"),
  Take: about((v) => `out = the elements of ${v} at flat indices`, "grad added back at those flat indices (repeated ones add), 0 elsewhere"),
  AsStrided: about((v) => `out = a strided view of ${v}'s memory`, "grad summed back into the element each view position reads"),
  ConstantPadNd: about((v, c) => `out = ${v} padded by ${said(c, "pad", "pad")} with a constant`, "grad with the padding cut off (what a negative pad cropped gets 0)"),
  ReflectionPad1D: REFLECTED,
  ReflectionPad2D: REFLECTED,
  ReflectionPad3D: REFLECTED,
  ReplicationPad1D: REPLICATED,
  ReplicationPad2D: REPLICATED,
  ReplicationPad3D: REPLICATED,
  PixelShuffle: about((v, c) => `out = ${v}'s channels rearranged into an image ${said(c, "upscale_factor", "r")}× as large`, "grad rearranged back (pixel_unshuffle)"),
  PixelUnshuffle: about((v, c) => `out = ${v}'s image cut into ${said(c, "downscale_factor", "r")}×${said(c, "downscale_factor", "r")} blocks stacked as channels`, "grad rearranged back (pixel_shuffle)"),
  // F.unfold and F.fold
  Im2Col: about((v, c) => `out = F.unfold(${v}): every ${said(c, "kernel_size", "k")} patch as a column`, "each column's grad added back onto the pixels of its patch (F.fold: overlapping patches add)"),
  Col2Im: rule("out = F.fold: columns summed into an image, overlapping patches adding", "grad cut into the same patches, one column each (F.unfold)"),
  UpsampleNearest1D: NEAREST,
  UpsampleNearest2D: NEAREST,
  UpsampleNearest3D: NEAREST,
  UpsampleNearestExact1D: NEAREST,
  UpsampleNearestExact2D: NEAREST,
  UpsampleNearestExact3D: NEAREST,
  UpsampleLinear1D: INTERPOLATED,
  UpsampleBilinear2D: INTERPOLATED,
  UpsampleBilinear2DAa: INTERPOLATED,
  UpsampleBicubic2D: INTERPOLATED,
  UpsampleBicubic2DAa: INTERPOLATED,
  UpsampleTrilinear3D: INTERPOLATED,
  AdaptiveAvgPool2D: ADAPTIVE_AVG,
  AdaptiveAvgPool3D: ADAPTIVE_AVG,
  AdaptiveMaxPool2D: ADAPTIVE_MAX,
  AdaptiveMaxPool3D: ADAPTIVE_MAX,
  AvgPool3D: rule("out = the mean of each window", "grad spread evenly over each window"),
  MaxPool3DWithIndices: rule("out = the largest element of each window", "grad routed to each window's maximum, 0 elsewhere"),
};
