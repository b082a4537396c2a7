#include "linalg/csr_matrix.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace radstream {

CsrMatrix CsrMatrix::transposed() const {
  CsrMatrix t;
  t.rows = cols;
  t.cols = rows;
  t.row_ptr.assign(std::size_t(cols) + 1, 0);
  for (int c : col) ++t.row_ptr[std::size_t(c) + 1];
  for (int r = 0; r < cols; ++r) t.row_ptr[r + 1] += t.row_ptr[r];
  t.col.resize(col.size());
  t.val.resize(val.size());
  std::vector<int> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (int r = 0; r < rows; ++r)
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      const int at = next[col[j]]++;
      t.col[at] = r;
      t.val[at] = val[j];
    }
  return t;
}

CsrMatrix CsrMatrix::gram() const {
  const CsrMatrix t = transposed();
  CsrMatrix g;
  g.rows = g.cols = cols;
  g.row_ptr.assign(1, 0);
  std::vector<double> acc(std::size_t(cols), 0.0);
  std::vector<int> mark(std::size_t(cols), -1), touched;
  for (int a = 0; a < cols; ++a) {
    touched.clear();
    for (int j = t.row_ptr[a]; j < t.row_ptr[a + 1]; ++j) {  // rows r of C with C[r][a] != 0
      const int r = t.col[j];
      for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
        const int b = col[k];
        if (mark[b] != a) {
          mark[b] = a;
          acc[b] = 0.0;
          touched.push_back(b);
        }
        acc[b] += double(t.val[j]) * double(val[k]);
      }
    }
    std::sort(touched.begin(), touched.end());
    for (int b : touched) {
      g.col.push_back(b);
      g.val.push_back(float(acc[b]));
    }
    g.row_ptr.push_back(int(g.col.size()));
  }
  return g;
}

void CsrMatrix::validate() const {
  auto bad = [](const std::string& what) { throw InputError("CSR matrix: " + what); };
  if (rows < 0 || cols < 0) bad("negative size " + std::to_string(rows) + " x " + std::to_string(cols));
  if (row_ptr.size() != std::size_t(rows) + 1)
    bad(std::to_string(row_ptr.size()) + " row offsets for " + std::to_string(rows) + " rows");
  if (row_ptr[0] != 0) bad("row_ptr[0] = " + std::to_string(row_ptr[0]) + ", not 0");
  for (int r = 0; r < rows; ++r)
    if (row_ptr[r + 1] < row_ptr[r]) bad("row_ptr decreases at row " + std::to_string(r));
  if (std::size_t(row_ptr.back()) != col.size() || col.size() != val.size())
    bad(std::to_string(col.size()) + " columns and " + std::to_string(val.size()) + " values for " +
        std::to_string(row_ptr.back()) + " non-zeros");
  for (std::size_t j = 0; j < col.size(); ++j)
    if (col[j] < 0 || col[j] >= cols)
      bad("column " + std::to_string(col[j]) + " out of range at " + std::to_string(j));
}

CsrMatrix finite_difference_csr(const std::array<int, 3>& n, const std::vector<int>* regions) {
  CsrMatrix c;
  const long long V = (long long)n[0] * n[1] * n[2];
  if (V > (1LL << 29)) throw ConfigError("finite differences: " + std::to_string(V) + " voxels is too many");
  if (regions && regions->size() != std::size_t(V))
    throw ConfigError("finite differences: " + std::to_string(regions->size()) + " region labels for " +
                      std::to_string(V) + " voxels");
  c.cols = int(V);
  const long long stride[3] = {(long long)n[1] * n[2], n[2], 1};
  for (int a = 0; a < 3; ++a) {
    if (n[a] <= 1) continue;
    for (long long v = 0; v < V; ++v) {
      const long long i = (v / stride[a]) % n[a];
      if (i + 1 >= n[a]) continue;
      if (regions && (*regions)[std::size_t(v)] != (*regions)[std::size_t(v + stride[a])]) continue;
      c.col.push_back(int(v));
      c.val.push_back(-1.0f);
      c.col.push_back(int(v + stride[a]));
      c.val.push_back(1.0f);
      c.row_ptr.push_back(int(c.col.size()));
      ++c.rows;
    }
  }
  return c;
}

CsrOperatorCpu::CsrOperatorCpu(CsrMatrix c, Extents domain)
    : LinearOperator(domain, Extents{std::size_t(c.rows)}, Location::Host), c_(std::move(c)) {
  c_.validate();
  if (domain.size() != std::size_t(c_.cols))
    throw ConfigError("CSR operator: " + std::to_string(c_.cols) + " columns for a domain of " +
                      domain.str());
  ct_ = c_.transposed();
  ctc_ = c_.gram();
}

namespace {
void spmv(const CsrMatrix& m, const cfloat* x, cfloat* y) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < m.rows; ++r) {
    cfloat s{};
    for (int j = m.row_ptr[r]; j < m.row_ptr[r + 1]; ++j) s += m.val[j] * x[m.col[j]];
    y[r] = s;
  }
}
}  // namespace

void CsrOperatorCpu::forward(const cfloat* x, cfloat* y) {
  spmv(c_, x, y);
}
void CsrOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  spmv(ct_, y, x);
}
void CsrOperatorCpu::normal(const cfloat* x, cfloat* z) {
  spmv(ctc_, x, z);
}

}  // namespace radstream
