// A small strict CSV reader (RFC 4180 quoting, header row required).
//
// Contract: `CsvTable::read(path)` loads a whole file or throws InputError
// naming the file and line. Fields are addressed by header name; `field()`
// and the typed getters throw InputError naming file, line, column and value.
// Empty lines are skipped. The openb traces are plain comma-separated values;
// this reader exists because none of the project's libraries reads CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpupack {

class CsvTable {
 public:
  static CsvTable read(const std::string& path);
  static CsvTable parse(std::string_view text, const std::string& source_name);

  struct Row {
    int line = 0;  // 1-based line in the file
    std::vector<std::string> fields;
  };

  const std::string& source() const { return source_; }
  const std::vector<Row>& rows() const { return rows_; }
  bool has_column(std::string_view name) const;
  // Throws InputError when the column is missing.
  int column(std::string_view name) const;
  std::optional<int> find_column(std::string_view name) const;

  // Typed access; column is the index from column().
  const std::string& field(const Row& row, int column) const;
  int64_t int_field(const Row& row, int column, int64_t min_value, int64_t max_value) const;

  [[noreturn]] void fail(const Row& row, int column, const std::string& what) const;

 private:
  std::string source_;
  std::vector<std::string> header_;
  std::unordered_map<std::string, int> index_;
  std::vector<Row> rows_;
};

}  // namespace gpupack
