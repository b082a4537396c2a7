#include <cusparse.h>

#include <complex>
#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "linalg/csr_matrix.hpp"

namespace radstream {

namespace {

void check_cusparse(cusparseStatus_t s, const char* call, const char* file, int line) {
  if (s != CUSPARSE_STATUS_SUCCESS) throw CudaError(call, cusparseGetErrorString(s), file, line);
}
#define CUSPARSE_CHECK(call) check_cusparse((call), #call, __FILE__, __LINE__)

}  // namespace

// One CSR matrix on the device with its SpMV descriptors; the vectors are rebound at every call.
struct CusparseCsr {
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t mat = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;
  DeviceBuffer<int> row_ptr, col;
  DeviceBuffer<cfloat> val;
  DeviceBuffer<char> buffer;

  CusparseCsr(const CsrMatrix& m, gpu::StreamRef stream) {
    auto s = static_cast<cudaStream_t>(stream);
    CUSPARSE_CHECK(cusparseCreate(&handle));
    CUSPARSE_CHECK(cusparseSetStream(handle, s));
    const std::size_t nnz = m.nonzeros();
    row_ptr = DeviceBuffer<int>(Extents{m.row_ptr.size()});
    col = DeviceBuffer<int>(Extents{std::max<std::size_t>(nnz, 1)});
    val = DeviceBuffer<cfloat>(Extents{std::max<std::size_t>(nnz, 1)});
    std::vector<cfloat> v(m.val.begin(), m.val.end());
    gpu::copy_to_device(row_ptr.data(), m.row_ptr.data(), m.row_ptr.size() * sizeof(int), stream);
    if (nnz) {
      gpu::copy_to_device(col.data(), m.col.data(), nnz * sizeof(int), stream);
      gpu::copy_to_device(val.data(), v.data(), nnz * sizeof(cfloat), stream);
    }
    CUSPARSE_CHECK(cusparseCreateCsr(&mat, m.rows, m.cols, std::int64_t(nnz), row_ptr.data(), col.data(),
                                     val.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_BASE_ZERO, CUDA_C_32F));
    // The vector descriptors are made once here; apply() points them at each call's vectors
    // (cusparseDnVecSetValues), so nothing is created per call.
    CUSPARSE_CHECK(cusparseCreateDnVec(&x, m.cols, val.data(), CUDA_C_32F));
    CUSPARSE_CHECK(cusparseCreateDnVec(&y, m.rows, val.data(), CUDA_C_32F));
    const cuComplex one{1, 0}, zero{0, 0};
    std::size_t bytes = 0;
    CUSPARSE_CHECK(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, x, &zero, y,
                                           CUDA_C_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
    buffer = DeviceBuffer<char>(Extents{std::max<std::size_t>(bytes, 1)});
    // The matrix's analysis once here, not in every SpMV (the vectors' values are not read).
    CUSPARSE_CHECK(cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, x, &zero, y,
                                           CUDA_C_32F, CUSPARSE_SPMV_ALG_DEFAULT, buffer.data()));
    gpu::synchronize(stream);
  }
  ~CusparseCsr() {
    if (x) cusparseDestroyDnVec(x);
    if (y) cusparseDestroyDnVec(y);
    if (mat) cusparseDestroySpMat(mat);
    if (handle) cusparseDestroy(handle);
  }
  void apply(const cfloat* d_in, cfloat* d_out) {
    CUSPARSE_CHECK(cusparseDnVecSetValues(x, const_cast<cfloat*>(d_in)));
    CUSPARSE_CHECK(cusparseDnVecSetValues(y, d_out));
    const cuComplex one{1, 0}, zero{0, 0};
    CUSPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, x, &zero, y, CUDA_C_32F,
                                CUSPARSE_SPMV_ALG_DEFAULT, buffer.data()));
  }
};

CsrOperatorCuda::CsrOperatorCuda(const CsrMatrix& c, Extents domain, gpu::StreamRef stream)
    : LinearOperator(domain, Extents{std::size_t(c.rows)}, Location::Device), stream_(stream) {
  c.validate();
  if (domain.size() != std::size_t(c.cols))
    throw ConfigError("CSR operator: " + std::to_string(c.cols) + " columns for a domain of " + domain.str());
  auto a = std::make_unique<CusparseCsr>(c, stream);
  auto t = std::make_unique<CusparseCsr>(c.transposed(), stream);
  auto g = std::make_unique<CusparseCsr>(c.gram(), stream);
  c_ = a.release();
  ct_ = t.release();
  ctc_ = g.release();
}

CsrOperatorCuda::~CsrOperatorCuda() {
  delete c_;
  delete ct_;
  delete ctc_;
}

void CsrOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  c_->apply(d_x, d_y);
}
void CsrOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  ct_->apply(d_y, d_x);
}
void CsrOperatorCuda::normal(const cfloat* d_x, cfloat* d_z) {
  ctc_->apply(d_x, d_z);
}

}  // namespace radstream
